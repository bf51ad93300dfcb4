// Compressed allreduce benchmark: in one run, MPI_Allreduce (Open MPI's
// default algorithm and its ring), bagua_allreduce (exact), and the
// compressed allreduce of every algorithm the library lists (bagua_allreduce_alg, sign with
// its state), on
// float32 buffers. Columns follow nccl-tests; with a link rate (--link RATE or
// BAGUA_BENCH_LINK, set by bench/netemu.sh) each row also shows the bytes a
// rank sends, the time the link alone needs for them and the fraction of that
// limit reached; the last column is the speed relative to the best
// MPI_Allreduce of the same run (> 1: faster).
//
// usage: mpirun -np N bagua-bench-compressed [-s MiB,MiB,...] [-i ITERS] [-w WARMUP]
//                                            [-a mpi,ring,bagua,q8,...]
//                                            [--link RATE] [--evict MiB] [--interleave]
//                                            [--drain BYTES]
// --evict MiB: each rank reads that many MiB before every timed call
// (untimed), so the call starts from cold caches, as one after a training
// step's backward pass does (default 0: calls follow each other, their
// buffers cached as far as they fit).
// --interleave: each round times every algorithm once, in -a's order,
// instead of all of one algorithm's calls before the next algorithm's (the
// default): a slow moment of a machine whose ranks share cores then falls
// on every algorithm of a size alike, which keeps their ratios honest.
// --drain BYTES: before each timed call (after the eviction), every rank
// sends BYTES to its right neighbour and receives as many from its left,
// untimed. An emulated link's token bucket refills while the link idles (the
// previous call's last decode, a result check, an eviction) and would let
// the next short call through faster than the rate; drained, the call
// starts as on a real link, which has no credit to spend (default:
// BAGUA_BENCH_LINK_BURST, which bench/netemu.sh sets to its burst, else 0).
// Open MPI's ring is selected for one duplicated communicator through the
// MPI_T control variable coll_tuned_allreduce_algorithm (4 = ring), which
// needs coll_tuned_use_dynamic_rules=1: this program sets that in its
// environment before MPI_Init.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bagua.h"
#include "link_columns.hpp"

namespace {

// MPI's allreduce (default and forced ring), bagua's exact one ("bagua"),
// then every compressed algorithm the library lists, in its order.
std::vector<std::string> all_algorithms() {
  std::vector<std::string> names{"mpi", "ring", "bagua"};
  for (int a = 1; const char *name = bagua_algorithm_name(bagua_algorithm(a)); ++a)
    names.push_back(name);
  return names;
}

// What crosses the wire for each row: MPI's rows are charged the exact
// allreduce's volume, the least a bandwidth-optimal algorithm sends.
bagua_algorithm wire_of(const std::string &algo) {
  bagua_algorithm a = BAGUA_ALGORITHM_EXACT;
  if (algo == "mpi" || algo == "ring" || algo == "bagua") return a;
  return bagua_algorithm_from_name(algo.c_str(), &a) == BAGUA_SUCCESS ? a : BAGUA_ALGORITHM_EXACT;
}

struct Config {
  std::vector<double> sizes_mib{1, 16, 64};
  int iters = 5;
  int warmup = 1;
  std::vector<std::string> algos = all_algorithms();
  bagua_bench::LinkColumns link;
  double evict_mib = 0;
  long long drain_bytes = 0;
  bool interleave = false;
};

// A byte count of at most 1 GiB, digits only.
bool parse_bytes(const char *text, long long *out) {
  char *end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > (1LL << 30)) return false;
  *out = v;
  return true;
}

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

bool parse(int argc, char **argv, Config *c, std::string *why) {
  const char *link = nullptr;
  if (const char *burst = std::getenv("BAGUA_BENCH_LINK_BURST"); burst != nullptr && *burst)
    if (!parse_bytes(burst, &c->drain_bytes)) {
      *why = std::string("BAGUA_BENCH_LINK_BURST '") + burst + "' is not a byte count (0 .. 2^30)";
      return false;
    }
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--interleave") {
      c->interleave = true;
      continue;
    }
    if (i + 1 == argc) {
      *why = flag + " needs a value";
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "-s") {
      c->sizes_mib.clear();
      for (const std::string &v : split(value)) c->sizes_mib.push_back(std::atof(v.c_str()));
    } else if (flag == "-i") {
      c->iters = std::atoi(value.c_str());
    } else if (flag == "-w") {
      c->warmup = std::atoi(value.c_str());
    } else if (flag == "-a") {
      c->algos = split(value);
      for (const std::string &algo : c->algos)
        if (const auto known = all_algorithms();
            std::find(known.begin(), known.end(), algo) == known.end()) {
          *why = "unknown algorithm '" + algo + "' in -a";
          return false;
        }
    } else if (flag == "--link" || flag == "-l") {
      link = argv[i];
    } else if (flag == "--drain") {
      if (!parse_bytes(value.c_str(), &c->drain_bytes)) {
        *why = "--drain takes a byte count, 0 .. 2^30";
        return false;
      }
    } else if (flag == "--evict") {
      c->evict_mib = std::atof(value.c_str());
      if (!(c->evict_mib >= 0)) {
        *why = "--evict takes a size in MiB, 0 or more";
        return false;
      }
    } else {
      return false;
    }
  }
  return c->iters > 0 && c->warmup >= 0 && c->link.init(link, why);
}

// Open MPI's ring allreduce on a fresh duplicate of MPI_COMM_WORLD.
MPI_Comm ring_comm() {
  int provided = 0, index = 0, n = 0;
  MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
  MPI_T_cvar_handle handle;
  if (MPI_T_cvar_get_index("coll_tuned_allreduce_algorithm", &index) != MPI_SUCCESS ||
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &n) != MPI_SUCCESS)
    return MPI_COMM_NULL;
  int ring = 4, none = 0;
  MPI_T_cvar_write(handle, &ring);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_T_cvar_write(handle, &none);
  MPI_T_cvar_handle_free(&handle);
  MPI_T_finalize();
  return comm;
}

struct Row {
  std::string algo;
  double seconds;
  std::string error;
};

// Integers 1..13: exact in float32 sums, so exact algorithms must match.
float input(int rank, size_t i) { return float((rank * 7 + i) % 13 + 1); }

class Bench {
 public:
  Bench(size_t count, MPI_Comm mpi_default, MPI_Comm mpi_ring, double evict_mib,
        long long drain_bytes)
      : count_(count),
        send_(count),
        recv_(count),
        evict_(size_t(evict_mib * 1024 * 1024), 1),
        drain_(size_t(drain_bytes)),
        mpi_(mpi_default),
        ring_(mpi_ring) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &n_);
    for (size_t i = 0; i < count; ++i) send_[i] = input(rank_, i);
    bagua_sign_state_create(int(count), MPI_COMM_WORLD, &sign_);
  }
  ~Bench() { bagua_sign_state_destroy(&sign_); }

  int call(const std::string &algo) {
    const void *s = send_.data();
    void *r = recv_.data();
    const int c = int(count_);
    if (algo == "mpi") return MPI_Allreduce(s, r, c, MPI_FLOAT, MPI_SUM, mpi_);
    if (algo == "ring") return MPI_Allreduce(s, r, c, MPI_FLOAT, MPI_SUM, ring_);
    if (algo == "bagua") return bagua_allreduce(s, r, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    const bagua_algorithm a = wire_of(algo);
    if (bagua_algorithm_has_state(a))
      return bagua_allreduce_sign(s, r, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, sign_);
    return bagua_allreduce_alg(s, r, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, a);
  }

  // Mean time per call of the slowest rank, after `warmup` untimed calls of
  // each algorithm, round by round: round i times each of `algos` once (so
  // that, with several, a slow moment of the machine falls on all of them
  // alike). The error is taken after the timed rounds, from one more untimed
  // call of each algorithm: checking a result keeps the link idle for tens
  // of milliseconds, in which an emulated link's token bucket (bench/netemu.sh:
  // 256 KB) refills, and a timed call right after it would send its first
  // bytes faster than the link's rate (doc/benchmarks.md, "What was tried").
  std::vector<Row> measure(const std::vector<std::string> &algos, int iters, int warmup) {
    for (const std::string &algo : algos)
      for (int i = 0; i < warmup; ++i) check(algo, call(algo));
    std::vector<Row> rows;
    for (const std::string &algo : algos) rows.push_back({algo, 0, ""});
    for (int i = 0; i < iters; ++i)
      for (Row &row : rows) row.seconds += timed_call(row.algo) / iters;
    for (Row &row : rows) {
      check(row.algo, call(row.algo));
      row.error = error(row.algo);
    }
    return rows;
  }

 private:
  // Reads one byte of each cache line of the eviction buffer (--evict).
  void evict_caches() {
    unsigned sum = 0;
    for (size_t i = 0; i < evict_.size(); i += 64) sum += evict_[i];
    sink_ = sum;
  }

  // --drain: one ring exchange of the burst's bytes empties the token
  // bucket of every emulated host's way out and way in.
  void drain_link() {
    if (drain_.empty() || n_ == 1) return;
    MPI_Sendrecv_replace(drain_.data(), int(drain_.size()), MPI_BYTE, (rank_ + 1) % n_, 0,
                         (rank_ + n_ - 1) % n_, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }

  // One call from a barrier, timed on the slowest rank.
  double timed_call(const std::string &algo) {
    evict_caches();
    drain_link();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    check(algo, call(algo));
    double dt = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return dt;
  }

  void check(const std::string &algo, int rc) {
    if (rc == 0) return;
    std::fprintf(stderr, "%s failed: %s\n", algo.c_str(), bagua_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }

  // Exact algorithms: number of wrong elements; compressed ones: the
  // largest error relative to the largest exact value (max over ranks).
  std::string error(const std::string &algo) {
    const bool exact = algo == "mpi" || algo == "ring" || algo == "bagua";
    double wrong = 0, worst = 0, scale = 0;
    for (size_t i = 0; i < count_; ++i) {
      double want = 0;
      for (int r = 0; r < n_; ++r) want += input(r, i);
      const double err = std::fabs(double(recv_[i]) - want);
      wrong += err != 0;
      worst = std::max(worst, err);
      scale = std::max(scale, want);
    }
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    char text[64];
    if (exact)
      std::snprintf(text, sizeof text, "%.0f wrong", wrong);
    else
      std::snprintf(text, sizeof text, "max %.1e", scale > 0 ? worst / scale : worst);
    return text;
  }

  size_t count_;
  std::vector<float> send_, recv_;
  std::vector<unsigned char> evict_;
  std::vector<char> drain_;
  volatile unsigned sink_ = 0;
  MPI_Comm mpi_, ring_;
  int rank_ = 0, n_ = 1;
  bagua_sign_state_t sign_ = nullptr;
};

// The bytes this rank sends in one call of `algo`, as the library counts them.
long long bytes_sent(const std::string &algo, size_t count) {
  MPI_Count bytes = 0;
  if (bagua_allreduce_bytes(wire_of(algo), MPI_Count(count), MPI_FLOAT, MPI_COMM_WORLD, &bytes) !=
      BAGUA_SUCCESS) {
    std::fprintf(stderr, "bagua_allreduce_bytes: %s\n", bagua_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return static_cast<long long>(bytes);
}

void print_size(size_t count, int n, const Config &config, const std::vector<Row> &rows) {
  double best_mpi = 0;
  for (const Row &r : rows)
    if (r.algo == "mpi" || r.algo == "ring")
      best_mpi = best_mpi == 0 ? r.seconds : std::min(best_mpi, r.seconds);
  const double bytes = double(count) * sizeof(float);
  for (const Row &r : rows) {
    const double algbw = bytes / r.seconds / 1e9, busbw = algbw * 2.0 * (n - 1) / n;
    char ratio[32] = "-";
    if (best_mpi > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", best_mpi / r.seconds);
    std::printf("%12.0f %11zu %6s %9s %12.0f %8.3f %8.3f%s %13s %11s\n", bytes, count, "float",
                r.algo.c_str(), r.seconds * 1e6, algbw, busbw,
                config.link.cells(bytes_sent(r.algo, count), r.seconds).c_str(), r.error.c_str(),
                ratio);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
  setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  Config config;
  std::string why;
  if (!parse(argc, argv, &config, &why)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "bagua-bench-compressed: %s\nusage: bagua-bench-compressed [-s MiB,...] "
                   "[-i ITERS] [-w WARMUP] [-a mpi,ring,bagua,<algorithm names>] "
                   "[--link RATE] [--evict MiB] [--interleave] [--drain BYTES]\n",
                   why.empty() ? "bad arguments" : why.c_str());
    MPI_Finalize();
    return 2;
  }
  MPI_Comm mpi_default;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi_default);
  MPI_Comm mpi_ring = ring_comm();
  if (mpi_ring == MPI_COMM_NULL) {
    if (rank == 0) std::fprintf(stderr, "Open MPI's coll_tuned ring is unavailable: skipping it\n");
    config.algos.erase(std::remove(config.algos.begin(), config.algos.end(), "ring"),
                       config.algos.end());
  }
  if (rank == 0) {
    std::printf(
        "# bagua-bench-compressed: %d ranks, %d iterations (+%d warm-up), link %s, "
        "%g MiB read and %lld bytes sent around the ring (--drain) before each call,%s ratio "
        "= best MPI_Allreduce time / time\n",
        n, config.iters, config.warmup, config.link.name(), config.evict_mib, config.drain_bytes,
        config.interleave ? " algorithms interleaved," : "");
    std::printf("# %10s %11s %6s %9s %12s %8s %8s%s %13s %11s\n", "size(B)", "count", "type",
                "algorithm", "time(us)", "algbw", "busbw",
                bagua_bench::LinkColumns::header().c_str(), "error", "vs best MPI");
  }
  for (double mib : config.sizes_mib) {
    const auto count = size_t(mib * 1024 * 1024 / sizeof(float));
    Bench bench(count, mpi_default, mpi_ring, config.evict_mib, config.drain_bytes);
    std::vector<Row> rows;
    if (config.interleave)
      rows = bench.measure(config.algos, config.iters, config.warmup);
    else
      for (const std::string &algo : config.algos)
        rows.push_back(bench.measure({algo}, config.iters, config.warmup)[0]);
    if (rank == 0) print_size(count, n, config, rows);
  }
  MPI_Comm_free(&mpi_default);
  if (mpi_ring != MPI_COMM_NULL) MPI_Comm_free(&mpi_ring);
  bagua_finalize();
  MPI_Finalize();
  return 0;
}
