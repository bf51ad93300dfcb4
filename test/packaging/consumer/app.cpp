// A C++ consumer of installed bagua (test/packaging), linked with MPI's C library only.
#include <mpi.h>
// mpi.h came first, as in many programs: this links only if bagua's compile flags
// (pkg-config Cflags, the CMake target's definitions) kept MPI's C++ bindings out.
#include <bagua.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<double> grad(1000, rank + 1.0);
  const int rc = bagua_allreduce(MPI_IN_PLACE, grad.data(), static_cast<int>(grad.size()),
                                 MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  const double want = size * (size + 1) / 2.0;
  const bool ok = rc == BAGUA_SUCCESS &&
                  std::all_of(grad.begin(), grad.end(), [&](double v) { return v == want; });
  if (rc != BAGUA_SUCCESS)
    std::fprintf(stderr, "allreduce: %s: %s\n", bagua_error_string(rc), bagua_last_error());
  else if (ok && rank == 0)
    std::printf("C++ consumer: allreduce over %d ranks ok (bagua %s)\n", size,
                bagua_version_string());
  MPI_Finalize();
  return ok ? 0 : 1;
}
