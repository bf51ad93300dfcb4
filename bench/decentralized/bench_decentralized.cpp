// Time per step and bytes sent per rank per step of decentralized averaging
// (all, shift_one, ring, low-precision ring) against bagua_allreduce with
// BAGUA_AVG and MPI_Allreduce measured in the same run, on float32 buffers.
//
// usage: mpirun -np 4 bench-decentralized [MIB [ITERATIONS]]   (default 16 MiB, 5)
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bagua.h"

namespace {

int rank_, size_;

void check(int rc, const char *what) {
  if (rc == BAGUA_SUCCESS) return;
  std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank_, what, bagua_error_string(rc),
               bagua_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Seconds per call, the slowest rank's, after one warm-up call.
double seconds_per_step(int iterations, const std::function<void(int)> &step) {
  step(0);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 1; i <= iterations; ++i) step(i);
  double mine = (MPI_Wtime() - start) / iterations, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Bytes a rank sends per step, averaged over ranks (shift_one leaves one rank
// idle per round when n is odd).
double ring_allreduce_bytes(double b) { return 2.0 * (size_ - 1) / size_ * b; }
double shift_one_bytes(double b) { return size_ % 2 == 0 ? b : b * (size_ - 1) / size_; }
int ring_neighbours() { return size_ >= 3 ? 2 : size_ - 1; }
double q8_bytes(double count) { return count + 16.0 * ((static_cast<long>(count) + 2047) / 2048); }

// Speed-ups against bagua's exact allreduce and against MPI_Allreduce.
void report(const char *name, double seconds, double bytes, double exact, double mpi) {
  if (rank_ != 0) return;
  std::printf(
      "%-24s %9.2f ms/step %8.2f MiB sent/rank/step %6.2fx vs bagua_allreduce %6.2fx vs "
      "MPI_Allreduce\n",
      name, seconds * 1e3, bytes / (1 << 20), exact / seconds, mpi / seconds);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  const double mib = argc > 1 ? std::atof(argv[1]) : 16;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 5;
  const int count = static_cast<int>(mib * (1 << 20) / sizeof(float));
  const double bytes = double(count) * sizeof(float);
  std::vector<float> w(count, float(rank_)), out(count);
  if (rank_ == 0)
    std::printf("%d ranks, %.2f MiB float32, %d steps each (slowest rank)\n", size_, mib,
                iterations);

  const double exact = seconds_per_step(iterations, [&](int) {
    check(bagua_allreduce(w.data(), out.data(), count, MPI_FLOAT, BAGUA_AVG, MPI_COMM_WORLD),
          "bagua_allreduce");
  });
  const double mpi = seconds_per_step(iterations, [&](int) {
    MPI_Allreduce(w.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  });
  report("MPI_Allreduce (sum)", mpi, ring_allreduce_bytes(bytes), exact, mpi);
  report("bagua_allreduce (avg)", exact, ring_allreduce_bytes(bytes), exact, mpi);
  const struct {
    const char *name;
    bagua_peer_mode mode;
    double sent;
  } modes[] = {{"decentralized all", BAGUA_PEER_ALL, ring_allreduce_bytes(bytes)},
               {"decentralized shift_one", BAGUA_PEER_SHIFT_ONE, shift_one_bytes(bytes)},
               {"decentralized ring", BAGUA_PEER_RING, ring_neighbours() * bytes}};
  for (const auto &m : modes) {
    const double t = seconds_per_step(iterations, [&](int step) {
      check(bagua_decentralized_average(w.data(), out.data(), count, MPI_FLOAT, m.mode, step, 1,
                                        MPI_COMM_WORLD),
            m.name);
    });
    report(m.name, t, m.sent, exact, mpi);
  }
  bagua_lowprec_t state = nullptr;
  check(bagua_lowprec_create(w.data(), count, MPI_FLOAT, 1, MPI_COMM_WORLD, &state),
        "bagua_lowprec_create");
  const double lowprec = seconds_per_step(
      iterations, [&](int) { check(bagua_lowprec_step(state, w.data()), "bagua_lowprec_step"); });
  report("low-precision ring (q8)", lowprec, ring_neighbours() * q8_bytes(count), exact, mpi);
  bagua_lowprec_destroy(&state);
  bagua_finalize();
  MPI_Finalize();
  return 0;
}
