/* The public header compiles as C and the library links from a C program;
 * runs a small allreduce and a broadcast with closed-form expected values,
 * and looks an algorithm up by name. */
#include <stdio.h>

#include "bagua.h"

int main(int argc, char **argv) {
  int wrong = bagua_finalize() != BAGUA_ERR_NOT_INITIALIZED; /* before MPI_Init */
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double x[3] = {rank, 1.0, -rank};
  int rc = bagua_allreduce(MPI_IN_PLACE, x, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rc != BAGUA_SUCCESS) {
    fprintf(stderr, "bagua_allreduce: %s (%s)\n", bagua_error_string(rc), bagua_last_error());
    wrong = 1;
  }
  wrong += x[0] != size * (size - 1) / 2.0 || x[1] != size || x[2] != -x[0];
  int value = rank == 0 ? 42 : 0;
  wrong += bagua_bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD) != BAGUA_SUCCESS || value != 42;
  bagua_algorithm algorithm = BAGUA_ALGORITHM_EXACT;
  wrong += bagua_algorithm_from_name("q8", &algorithm) != BAGUA_SUCCESS ||
           algorithm != BAGUA_ALGORITHM_Q8;
  wrong += bagua_finalize() != BAGUA_SUCCESS;
  MPI_Finalize();
  wrong += bagua_finalize() != BAGUA_ERR_NOT_INITIALIZED; /* after MPI_Finalize */
  return wrong != 0;
}
