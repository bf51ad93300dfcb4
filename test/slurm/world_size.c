/* srun-test.sh's first step: fails unless MPI sees one world of argv[1] ranks (a launcher
 * whose process-management interface the MPI does not speak starts singletons instead). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int want = argc > 1 ? atoi(argv[1]) : -1;
  if (size != want) fprintf(stderr, "rank %d: world of %d ranks, not %d\n", rank, size, want);
  MPI_Finalize();
  return size == want ? 0 : 1;
}
