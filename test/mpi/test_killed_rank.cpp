// A rank killed mid-job (SIGKILL after its first call): under
// `mpirun --enable-recovery` (Open MPI) the survivors' next call returns
// BAGUA_ERR_TIMEOUT within BAGUA_TIMEOUT_MS and the one after it
// BAGUA_ERR_COMM_BROKEN. Each survivor prints "survivor <rank> ok" when its
// calls returned exactly that; killed_rank.sh counts those lines.
#include <bagua.h>
#include <signal.h>
#include <stdio.h>

#include <vector>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<float> x(1 << 16, 1.0f);
  const auto allreduce = [&] {
    return bagua_allreduce(MPI_IN_PLACE, x.data(), int(x.size()), MPI_FLOAT, MPI_SUM,
                           MPI_COMM_WORLD);
  };
  const bool first_ok = allreduce() == BAGUA_SUCCESS && x[0] == float(size);
  if (rank == size - 1) raise(SIGKILL);
  const int timed_out = allreduce();
  const int broken = allreduce();
  if (first_ok && timed_out == BAGUA_ERR_TIMEOUT && broken == BAGUA_ERR_COMM_BROKEN)
    printf("survivor %d ok\n", rank);
  else
    printf("survivor %d: first %d, then %d and %d: %s\n", rank, int(first_ok), timed_out, broken,
           bagua_last_error());
  fflush(stdout);
  // MPI_Finalize would wait for the killed rank; the survivors' results are in.
  _exit(0);
}
