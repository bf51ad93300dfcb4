// bagua-advise: which algorithm pays on this cluster (doc/tools.md,
// doc/tools.md, "bagua-advise"). mpiexec -n N bagua-advise --model-bytes 100M
#include <mpi.h>

#include <cstdio>

#include "advise/advise.hpp"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  bagua::advise::Args args;
  if (bagua::advise::parse_args(argc, argv, &args) != BAGUA_SUCCESS) {
    if (rank == 0)
      std::fprintf(stderr, "bagua-advise: %s\n%s", bagua::last_error_message(),
                   bagua::advise::usage());
    MPI_Finalize();
    return 2;
  }
  bagua::advise::Measurement m;
  if (bagua::advise::measure(MPI_COMM_WORLD, args, &m) != BAGUA_SUCCESS) {
    if (rank == 0) std::fprintf(stderr, "bagua-advise: %s\n", bagua::last_error_message());
    bagua_finalize();
    MPI_Finalize();
    return 2;
  }
  if (rank == 0) bagua::advise::print_report(stdout, args, m);
  bagua_finalize();
  MPI_Finalize();
  return 0;
}
