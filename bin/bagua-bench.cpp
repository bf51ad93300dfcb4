// bagua-bench: allreduce size sweep in nccl-tests' columns, bagua and
// MPI_Allreduce measured side by side in the same run; with -a impi,ibagua
// the nonblocking calls (MPI_Iallreduce, bagua_iallreduce), each followed by
// MPI_Wait, the bagua row against the MPI row of its kind.
//
//   mpirun -np 2 bagua-bench [-b 1K] [-e 64M] [-f 4] [-n 20] [-w 5] [-d float]
//                            [-o sum] [-a mpi,bagua,impi,ibagua] [--link RATE]
#include <getopt.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bagua.h"
#include "half.h"
#include "link_columns.hpp"

namespace {

using AllreduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

int mpi_allreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return MPI_Allreduce(s, r, c, t, o, comm) == MPI_SUCCESS ? BAGUA_SUCCESS : BAGUA_ERR_TRANSPORT;
}

int mpi_iallreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  MPI_Request request;
  if (MPI_Iallreduce(s, r, c, t, o, comm, &request) != MPI_SUCCESS) return BAGUA_ERR_TRANSPORT;
  return MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS ? BAGUA_SUCCESS : BAGUA_ERR_TRANSPORT;
}

int bagua_iallreduce_waited(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o,
                            MPI_Comm comm) {
  MPI_Request request;
  if (const int rc = bagua_iallreduce(s, r, c, t, o, comm, &request); rc != BAGUA_SUCCESS)
    return rc;
  return MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS ? BAGUA_SUCCESS : BAGUA_ERR_TRANSPORT;
}

struct Contender {
  const char *name;
  AllreduceFn fn;
  bool is_mpi;       // MPI's call: the peer row of its kind
  bool nonblocking;  // needs MPI_THREAD_MULTIPLE (bagua's nonblocking calls)
};

const Contender kContenders[] = {
    {"mpi", mpi_allreduce, true, false},
    {"bagua", bagua_allreduce, false, false},
    {"impi", mpi_iallreduce, true, true},
    {"ibagua", bagua_iallreduce_waited, false, true},
};

struct Config {
  size_t min_bytes = 1024, max_bytes = 64u << 20;
  size_t factor = 4;
  int iters = 20, warmup = 5;
  std::string type = "float", op = "sum", algos = "mpi,bagua";
  bagua_bench::LinkColumns link;
};

size_t parse_size(const char *s) {
  char *end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'G':
    case 'g': v *= 1024; [[fallthrough]];
    case 'M':
    case 'm': v *= 1024; [[fallthrough]];
    case 'K':
    case 'k': v *= 1024;
  }
  return static_cast<size_t>(v);
}

[[noreturn]] void usage(const char *why) {
  std::fprintf(stderr,
               "bagua-bench: %s\nusage: bagua-bench [-b minbytes] [-e maxbytes] [-f factor] "
               "[-n iters] [-w warmup] [-d float|double|float16|bfloat16] [-o sum|avg|max|min] "
               "[-a mpi,bagua,impi,ibagua] [-l|--link RATE]\n",
               why);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Config parse_args(int argc, char **argv) {
  Config c;
  static const option kLong[] = {{"link", required_argument, nullptr, 'l'}, {}};
  const char *link = nullptr;
  for (int opt; (opt = getopt_long(argc, argv, "b:e:f:n:w:d:o:a:l:h", kLong, nullptr)) != -1;) {
    switch (opt) {
      case 'b': c.min_bytes = parse_size(optarg); break;
      case 'e': c.max_bytes = parse_size(optarg); break;
      case 'f': c.factor = std::max<size_t>(2, std::strtoul(optarg, nullptr, 10)); break;
      case 'n': c.iters = std::max(1, std::atoi(optarg)); break;
      case 'w': c.warmup = std::max(0, std::atoi(optarg)); break;
      case 'd': c.type = optarg; break;
      case 'o': c.op = optarg; break;
      case 'a': c.algos = optarg; break;
      case 'l': link = optarg; break;
      default: usage("unknown option");
    }
  }
  std::string why;
  if (!c.link.init(link, &why)) usage(why.c_str());
  return c;
}

MPI_Datatype datatype_of(const std::string &t, size_t *elem) {
  *elem = t == "double" ? 8 : t == "float" ? 4 : 2;
  if (t == "float") return MPI_FLOAT;
  if (t == "double") return MPI_DOUBLE;
  if (t == "float16") return BAGUA_FLOAT16;
  if (t == "bfloat16") return BAGUA_BFLOAT16;
  usage("unknown datatype");
}

MPI_Op op_of(const std::string &o) {
  if (o == "sum") return MPI_SUM;
  if (o == "avg") return BAGUA_AVG;
  if (o == "max") return MPI_MAX;
  if (o == "min") return MPI_MIN;
  usage("unknown op");
}

void print_header(const Config &cfg, int n, bool mpi_row) {
  std::printf("# bagua-bench: %d ranks, transport %s, %d iters (+%d warmup), link %s\n", n,
              std::getenv("BAGUA_TRANSPORT") ? std::getenv("BAGUA_TRANSPORT") : "mpi", cfg.iters,
              cfg.warmup, cfg.link.name());
  if (cfg.op == "avg") std::printf("# mpi row: MPI has no average, it sums\n");
  if (!mpi_row)
    std::printf("# no mpi row: MPI has no %s for bagua's 2-byte types\n", cfg.op.c_str());
  std::printf("# %12s %12s %9s %5s %-8s %10s %8s %8s%s %7s %8s\n", "size(B)", "count", "type", "op",
              "algo", "time(us)", "algbw", "busbw", bagua_bench::LinkColumns::header().c_str(),
              "#wrong", "vs mpi");
  std::printf("# %12s %12s %9s %5s %-8s %10s %8s %8s%36s %7s %8s\n", "", "", "", "", "", "",
              "(GB/s)", "(GB/s)", "", "", "(x)");
}

std::vector<Contender> select(const std::string &list) {
  std::vector<Contender> out;
  for (const Contender &c : kContenders)
    if (("," + list + ",").find(std::string(",") + c.name + ",") != std::string::npos)
      out.push_back(c);
  if (out.empty()) usage("no known algorithm in -a");
  return out;
}

// Inputs are small integers, exact in every type: (rank + i) % 5.
double input(int rank, size_t i) { return double((size_t(rank) + i) % 5); }

void store(MPI_Datatype t, void *buf, size_t i, double v) {
  if (t == MPI_FLOAT) static_cast<float *>(buf)[i] = float(v);
  if (t == MPI_DOUBLE) static_cast<double *>(buf)[i] = v;
  if (t == BAGUA_FLOAT16) static_cast<uint16_t *>(buf)[i] = bagua::float_to_fp16(float(v));
  if (t == BAGUA_BFLOAT16) static_cast<uint16_t *>(buf)[i] = bagua::float_to_bf16(float(v));
}

double load(MPI_Datatype t, const void *buf, size_t i) {
  if (t == MPI_FLOAT) return static_cast<const float *>(buf)[i];
  if (t == MPI_DOUBLE) return static_cast<const double *>(buf)[i];
  const uint16_t h = static_cast<const uint16_t *>(buf)[i];
  return t == BAGUA_FLOAT16 ? bagua::fp16_to_float(h) : bagua::bf16_to_float(h);
}

// The unit roundoff of the element type: an average (sum / n) may differ
// from the exact quotient by one rounding of the result type, plus one of
// float32 accumulation for the half types.
double tolerance(MPI_Datatype t) {
  if (t == MPI_DOUBLE) return 0x1p-52;
  if (t == MPI_FLOAT) return 0x1p-23;
  return t == BAGUA_FLOAT16 ? 0x1p-10 : 0x1p-7;
}

// The exact result of `op` for element i, from the closed-form inputs; an
// input depends on i only through i % 5, so five values cover every element.
std::array<double, 5> expected_results(const std::string &op, int n) {
  std::array<double, 5> out{};
  for (size_t i = 0; i < out.size(); ++i) {
    double sum = 0, hi = input(0, i), lo = input(0, i);
    for (int r = 0; r < n; ++r) {
      sum += input(r, i);
      hi = std::max(hi, input(r, i));
      lo = std::min(lo, input(r, i));
    }
    out[i] = op == "max" ? hi : op == "min" ? lo : op == "avg" ? sum / n : sum;
  }
  return out;
}

// One contender's call for a run: MPI gets what MPI can do with the type
// and op (see mpi_op), bagua the call as given.
struct Plan {
  MPI_Datatype type;
  MPI_Op op;
  std::string op_name;
  std::array<double, 5> expected;
};

// MPI has no average: the mpi row sums (and is checked against the sum).
// MPI's predefined ops are undefined on bagua's derived 2-byte types, so the
// mpi row reduces those with BAGUA_AVG, which MPI applies as a sum; there is
// no such op for max/min (nullopt: no mpi row).
std::optional<Plan> mpi_plan(const Plan &bagua, int n) {
  const bool half = bagua.type == BAGUA_FLOAT16 || bagua.type == BAGUA_BFLOAT16;
  const bool additive = bagua.op_name == "sum" || bagua.op_name == "avg";
  if (half && !additive) return std::nullopt;
  MPI_Op op = bagua.op_name == "avg" ? MPI_SUM : bagua.op;
  if (half) op = BAGUA_AVG;
  return Plan{bagua.type, op, "sum", expected_results(additive ? "sum" : bagua.op_name, n)};
}

void fill(std::vector<unsigned char> &buf, MPI_Datatype t, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) store(t, buf.data(), i, input(rank, i));
}

// Elements of `recv` farther from the expected result than the type's
// rounding allows (exact for sum, max and min of these inputs).
long count_wrong(const Plan &plan, const std::vector<unsigned char> &recv, size_t count) {
  const double rel = plan.op_name == "avg" ? tolerance(plan.type) : 0;
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = plan.expected[i % 5];
    wrong += !(std::fabs(load(plan.type, recv.data(), i) - want) <= rel * std::fabs(want));
  }
  return wrong;
}

struct Result {
  double seconds;
  long wrong;
};

// Times `iters` calls (after warmup); the slowest rank's time counts.
// #wrong: elements off the expected result on any rank, plus failed calls.
Result measure(const Contender &c, const Config &cfg, const Plan &plan, size_t count,
               const std::vector<unsigned char> &send, std::vector<unsigned char> &recv) {
  long failures = 0;
  std::fill(recv.begin(), recv.end(), 0xff);
  for (int i = 0; i < cfg.warmup; ++i)
    failures += c.fn(send.data(), recv.data(), int(count), plan.type, plan.op, MPI_COMM_WORLD) != 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < cfg.iters; ++i)
    failures += c.fn(send.data(), recv.data(), int(count), plan.type, plan.op, MPI_COMM_WORLD) != 0;
  double elapsed = (MPI_Wtime() - start) / cfg.iters, slowest = 0;
  MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  long wrong = failures + count_wrong(plan, recv, count), total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return {slowest, total};
}

// The bytes this rank sends in bagua's exact allreduce of the row, as the
// library reports them; for the mpi row too, as the volume a bandwidth-
// optimal allreduce needs.
long long bytes_sent(size_t count, MPI_Datatype t) {
  MPI_Count bytes = 0;
  if (bagua_allreduce_bytes(BAGUA_ALGORITHM_EXACT, MPI_Count(count), t, MPI_COMM_WORLD, &bytes) !=
      BAGUA_SUCCESS)
    usage(bagua_last_error());
  return static_cast<long long>(bytes);
}

}  // namespace

// MPI_THREAD_MULTIPLE only when a nonblocking contender runs, so the
// blocking rows keep MPI's default thread level.
void init_mpi(int *argc, char ***argv, const std::vector<Contender> &contenders) {
  const bool threads = std::any_of(contenders.begin(), contenders.end(),
                                   [](const Contender &c) { return c.nonblocking; });
  int provided = 0;
  MPI_Init_thread(argc, argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
}

int main(int argc, char **argv) {
  const Config cfg = parse_args(argc, argv);
  const std::vector<Contender> contenders = select(cfg.algos);
  init_mpi(&argc, &argv, contenders);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t elem = 0;
  const MPI_Datatype t = datatype_of(cfg.type, &elem);
  const Plan bagua_plan{t, op_of(cfg.op), cfg.op, expected_results(cfg.op, n)};
  const std::optional<Plan> mpi = mpi_plan(bagua_plan, n);
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;

  if (rank == 0) print_header(cfg, n, mpi.has_value());
  for (size_t bytes = cfg.min_bytes; bytes <= cfg.max_bytes; bytes *= cfg.factor) {
    const size_t count = std::max<size_t>(1, bytes / elem);
    const long long sent = bytes_sent(count, t);
    std::vector<unsigned char> send(count * elem), recv(count * elem);
    fill(send, t, count, rank);
    // The MPI row's time of each kind (blocking, nonblocking).
    double mpi_seconds[2] = {0, 0};
    for (const Contender &c : contenders) {
      if (c.is_mpi && !mpi) continue;
      const Plan &plan = c.is_mpi ? *mpi : bagua_plan;
      const Result r = measure(c, cfg, plan, count, send, recv);
      double &peer_seconds = mpi_seconds[c.nonblocking];
      if (c.is_mpi) peer_seconds = r.seconds;
      const double algbw = double(count * elem) / r.seconds / 1e9;
      if (rank == 0) {
        std::printf("  %12zu %12zu %9s %5s %-8s %10.1f %8.2f %8.2f%s %7ld", count * elem, count,
                    cfg.type.c_str(), plan.op_name.c_str(), c.name, r.seconds * 1e6, algbw,
                    algbw * bus_factor, cfg.link.cells(sent, r.seconds).c_str(), r.wrong);
        if (peer_seconds > 0) std::printf(" %8.2f", peer_seconds / r.seconds);
        std::printf("\n");
      }
    }
  }
  bagua_finalize();
  MPI_Finalize();
  return 0;
}
