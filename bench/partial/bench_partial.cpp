// Straggler benchmark of bagua_partial_reduce (the Partial Reduce paper's
// emulation): every iteration each rank "computes" for a fixed time and, with
// probability --prob, sleeps --straggle times longer on top; then it averages
// a float32 buffer, either with every rank (bagua_allreduce with BAGUA_AVG) or
// with the first P ready ranks (bagua_partial_reduce). Prints iterations per
// second of each mode, its ratio to allreduce measured in the same run, and
// the distribution of group sizes. Beside each measured ratio it prints the
// communication-free ideal for the same straggler draws (every rank's delays
// replayed with no time spent averaging: allreduce waits for the slowest
// rank each step, partial groups close when the P-th earliest rank arrives)
// and the measured ratio as a fraction of it ("of ideal"; above 1 when
// groups closed by the deadline with fewer than P members let ranks go on
// earlier than the ideal's groups of exactly P).
//
//   mpirun -np 4 bench-partial [--iters 40] [--compute-ms 20] [--straggle 5]
//                              [--prob 0.1] [--count 262144] [--groups 2,3,4]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bagua.h"

namespace {

struct Config {
  int iters = 40;
  double compute_ms = 20;
  double straggle = 5;  // extra sleep, in multiples of compute_ms
  double prob = 0.1;
  int count = 262144;
  std::vector<int> groups = {2, 3, 4};
};

Config parse(int argc, char **argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--iters")
      c.iters = std::stoi(value);
    else if (flag == "--compute-ms")
      c.compute_ms = std::stod(value);
    else if (flag == "--straggle")
      c.straggle = std::stod(value);
    else if (flag == "--prob")
      c.prob = std::stod(value);
    else if (flag == "--count")
      c.count = std::stoi(value);
    else if (flag == "--groups") {
      c.groups.clear();
      std::stringstream list(value);
      for (std::string p; std::getline(list, p, ',');) c.groups.push_back(std::stoi(p));
    }
  }
  return c;
}

struct Result {
  double iters_per_s = 0;        // summed over ranks
  std::vector<long long> sizes;  // sizes[k]: groups of k members
};

void check(int rc, const char *what) {
  if (rc == BAGUA_SUCCESS) return;
  std::fprintf(stderr, "%s failed: %s\n", what, bagua_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// Compute time of each iteration of `rank`: the same draws in every mode.
std::vector<double> delays_ms(const Config &c, int rank) {
  std::mt19937 rng(1234u + unsigned(rank));
  std::bernoulli_distribution straggles(c.prob);
  std::vector<double> ms(size_t(c.iters));
  for (double &d : ms) d = c.compute_ms * (1 + (straggles(rng) ? c.straggle : 0));
  return ms;
}

// Iterations per second summed over ranks when each iteration of every rank
// ends when the slowest rank's compute of that iteration does.
double ideal_allreduce(const std::vector<std::vector<double>> &delays, int iters) {
  double total_ms = 0;
  for (int it = 0; it < iters; ++it) {
    double slowest = 0;
    for (const auto &rank_delays : delays) slowest = std::max(slowest, rank_delays[size_t(it)]);
    total_ms += slowest;
  }
  return double(delays.size()) * iters / (total_ms / 1000);
}

// Iterations per second summed over ranks when groups form instantly: the P
// earliest ready ranks (fewer once fewer are still running) leave together
// when the last of them is ready.
double ideal_partial(const std::vector<std::vector<double>> &delays, int iters, int group_size) {
  const size_t n = delays.size();
  std::vector<double> ready(n);
  std::vector<int> done(n, 0);
  for (size_t r = 0; r < n; ++r) ready[r] = delays[r][0];
  std::vector<size_t> running(n);
  double rate = 0;
  // Each pass closes one group: the earliest ready running ranks.
  for (;;) {
    running.clear();
    for (size_t r = 0; r < n; ++r)
      if (done[r] < iters) running.push_back(r);
    if (running.empty()) break;
    std::sort(running.begin(), running.end(),
              [&](size_t a, size_t b) { return ready[a] < ready[b]; });
    const size_t members = std::min(running.size(), size_t(group_size));
    const double close = ready[running[members - 1]];
    for (size_t m = 0; m < members; ++m) {
      const size_t r = running[m];
      if (++done[r] == iters)
        rate += iters / (close / 1000);
      else
        ready[r] = close + delays[r][size_t(done[r])];
    }
  }
  return rate;
}

// One mode: group_size 0 means allreduce over all ranks.
Result run_mode(const Config &c, int group_size) {
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::vector<float> data(size_t(c.count), float(rank));
  std::vector<long long> sizes(size_t(n) + 1, 0);
  const std::vector<double> compute_ms = delays_ms(c, rank);
  // Warm-up: sets up the communicator (and the controller) collectively.
  check(bagua_allreduce(MPI_IN_PLACE, data.data(), c.count, MPI_FLOAT, BAGUA_AVG, comm), "warm-up");
  MPI_Barrier(comm);
  const auto start = std::chrono::steady_clock::now();
  for (int it = 0; it < c.iters; ++it) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(compute_ms[size_t(it)]));
    if (group_size == 0) {
      check(bagua_allreduce(MPI_IN_PLACE, data.data(), c.count, MPI_FLOAT, BAGUA_AVG, comm),
            "bagua_allreduce");
      continue;
    }
    bagua_group_info info;
    check(bagua_partial_reduce(MPI_IN_PLACE, data.data(), c.count, MPI_FLOAT, group_size, comm,
                               &info),
          "bagua_partial_reduce");
    if (info.members[0] == rank) ++sizes[size_t(info.size)];  // counted once per group
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (group_size != 0) check(bagua_partial_leave(comm), "bagua_partial_leave");
  Result r;
  const double mine = c.iters / seconds;
  MPI_Allreduce(&mine, &r.iters_per_s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  r.sizes.resize(sizes.size());
  MPI_Allreduce(sizes.data(), r.sizes.data(), int(sizes.size()), MPI_LONG_LONG, MPI_SUM,
                MPI_COMM_WORLD);
  MPI_Comm_free(&comm);
  return r;
}

std::string histogram(const std::vector<long long> &sizes) {
  std::string out;
  char entry[48];
  for (size_t k = 1; k < sizes.size(); ++k) {
    if (sizes[k] == 0) continue;
    std::snprintf(entry, sizeof(entry), " %zu:%lld", k, sizes[k]);
    out += entry;
  }
  return out.empty() ? " -" : out;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const Config c = parse(argc, argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (rank == 0)
    std::printf("ranks %d, %d iterations, compute %.1f ms, straggle p=%.2f x%.1f, %d floats\n", n,
                c.iters, c.compute_ms, c.prob, c.straggle, c.count);
  std::vector<std::vector<double>> delays;
  for (int r = 0; r < n; ++r) delays.push_back(delays_ms(c, r));
  const double ideal_base = ideal_allreduce(delays, c.iters);
  const Result base = run_mode(c, 0);
  if (rank == 0)
    std::printf("%-24s %8.2f it/s (all ranks)  ratio 1.00  ideal 1.00\n", "allreduce-average",
                base.iters_per_s);
  for (int p : c.groups) {
    if (p < 1 || p > n) continue;
    const Result r = run_mode(c, p);
    const double ratio = r.iters_per_s / base.iters_per_s;
    const double ideal = ideal_partial(delays, c.iters, p) / ideal_base;
    if (rank == 0)
      std::printf(
          "partial P=%-14d %8.2f it/s (all ranks)  ratio %.2f  ideal %.2f  of ideal %.2f  group "
          "sizes (size:count)%s\n",
          p, r.iters_per_s, ratio, ideal, ratio / ideal, histogram(r.sizes).c_str());
  }
  bagua_finalize();
  MPI_Finalize();
  return 0;
}
