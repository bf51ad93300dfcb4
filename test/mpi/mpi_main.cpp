// Catch2 main for tests launched with mpirun: every rank runs the same test
// cases in the same order, and the exit code is non-zero on every rank if any
// rank saw a failure. bagua_finalize runs before MPI_Finalize, as the API
// asks, and its failure fails the run.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "bagua.h"

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int failed = Catch::Session().run(argc, argv);
  if (bagua_finalize() != BAGUA_SUCCESS) {
    std::fprintf(stderr, "bagua_finalize: %s\n", bagua_last_error());
    failed = 1;
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
