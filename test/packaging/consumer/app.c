/* A consumer of installed bagua (test/packaging): a 2-rank allreduce, as in README.md. */
#include <bagua.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float grad[1000];
  for (int i = 0; i < 1000; ++i) grad[i] = (float)(rank + 1);
  const int rc = bagua_allreduce(MPI_IN_PLACE, grad, 1000, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const float want = (float)(size * (size + 1) / 2);
  int wrong = rc != BAGUA_SUCCESS;
  for (int i = 0; i < 1000; ++i) wrong += grad[i] != want;
  if (rc != BAGUA_SUCCESS)
    fprintf(stderr, "allreduce: %s: %s\n", bagua_error_string(rc), bagua_last_error());
  else if (wrong == 0 && rank == 0)
    printf("C consumer: allreduce over %d ranks ok (bagua %s)\n", size, bagua_version_string());
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
