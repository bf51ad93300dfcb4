// Buffers above INT_MAX bytes (bagua_allreduce_c, bagua_allreduce_q8_c): the
// exact allreduce with recursive doubling sends the whole buffer as one
// message (split by the transport), and q8 runs its segmented schedule. The
// inputs are small integers, so the exact result is known in closed form
// and q8's is within its bound. Exits 77 (SKIP) on every rank when the
// machine has less than 12 GiB of memory available. Plain main: the skip
// must happen before any test runs.
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bagua.h"

namespace {

// Just above INT_MAX bytes of float32.
constexpr MPI_Count kCount = MPI_Count(INT_MAX) / 4 + 4099;

int failures = 0;

void expect(bool ok, const char *what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "FAILED: %s: %s\n", what, bagua_last_error());
}

bool enough_memory_everywhere() {
  const double available = double(sysconf(_SC_AVPHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  const int mine = available >= 12.0 * (1 << 30) ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

float input(int rank, MPI_Count i) { return float((i + rank) % 5); }

// Sum over ranks of input(r, i), exactly.
double expected(int ranks, MPI_Count i) {
  double sum = 0;
  for (int r = 0; r < ranks; ++r) sum += input(r, i);
  return sum;
}

void fill(std::vector<float> &data, int rank) {
  for (MPI_Count i = 0; i < kCount; ++i) data[size_t(i)] = input(rank, i);
}

// Elements further than `bound` from the exact sum, agreed on all ranks.
long long wrong_elements(const std::vector<float> &data, int ranks, double bound) {
  long long wrong = 0;
  for (MPI_Count i = 0; i < kCount; ++i)
    wrong += std::fabs(double(data[size_t(i)]) - expected(ranks, i)) > bound;
  long long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (!enough_memory_everywhere()) {
    std::printf("SKIP: less than 12 GiB of memory available\n");
    MPI_Finalize();
    return 77;
  }
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<float> data(static_cast<size_t>(kCount));

  // Recursive doubling: one message of the whole buffer per exchange.
  setenv("BAGUA_ALLREDUCE_ALGO", "rd", 1);
  MPI_Comm rd;
  MPI_Comm_dup(MPI_COMM_WORLD, &rd);
  fill(data, rank);
  expect(
      bagua_allreduce_c(MPI_IN_PLACE, data.data(), kCount, MPI_FLOAT, MPI_SUM, rd) == BAGUA_SUCCESS,
      "bagua_allreduce_c");
  expect(wrong_elements(data, ranks, 0.0) == 0, "exact sum above INT_MAX bytes");
  MPI_Comm_free(&rd);
  unsetenv("BAGUA_ALLREDUCE_ALGO");

  // q8: each block's range is 4 per rank, so the error is at most
  // (4 (n - 1) + 4 n) / 510.
  fill(data, rank);
  expect(bagua_allreduce_q8_c(MPI_IN_PLACE, data.data(), kCount, MPI_FLOAT, MPI_SUM,
                              MPI_COMM_WORLD) == BAGUA_SUCCESS,
         "bagua_allreduce_q8_c");
  expect(wrong_elements(data, ranks, (4.0 * (ranks - 1) + 4.0 * ranks) / 510 + 1e-5) == 0,
         "q8 sum above INT_MAX bytes");

  int all_failures = 0;
  MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s\n", all_failures == 0 ? "PASSED" : "FAILED");
  bagua_finalize();
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
