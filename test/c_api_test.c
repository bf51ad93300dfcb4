/* The public header compiles as C and the library links from a C program;
 * runs a small allreduce and a broadcast with closed-form expected values,
 * looks an algorithm up by name, and refuses an out-of-band group without its
 * allgather. */
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
  /* The initializer compiles as C; without a callback the call is refused. */
  bagua_oob oob = BAGUA_OOB_INITIALIZER;
  oob.rank = 0;
  oob.size = 1;
  MPI_Comm oob_comm = MPI_COMM_WORLD;
  wrong += bagua_comm_create_oob(&oob, &oob_comm) != BAGUA_ERR_INVALID_ARGUMENT ||
           oob_comm != MPI_COMM_NULL;
  wrong += bagua_finalize() != BAGUA_SUCCESS;
  MPI_Finalize();
  wrong += bagua_finalize() != BAGUA_ERR_NOT_INITIALIZED; /* after MPI_Finalize */
  return wrong != 0;
}
