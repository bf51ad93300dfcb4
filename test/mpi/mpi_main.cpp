// Catch2 main for tests launched with mpirun: every rank runs the same test
// cases in the same order, and the exit code is non-zero on every rank if any
// rank saw a failure.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <catch2/catch.hpp>

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const int failed = Catch::Session().run(argc, argv);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
