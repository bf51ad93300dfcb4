// bagua-bench: allreduce size sweep in nccl-tests' columns, bagua and
// MPI_Allreduce measured side by side in the same run.
//
//   mpirun -np 2 bagua-bench [-b 1K] [-e 64M] [-f 4] [-n 20] [-w 5] [-d float]
//                            [-o sum] [-a mpi,bagua]
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bagua.h"

namespace {

using AllreduceFn = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

int mpi_allreduce(const void *s, void *r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  return MPI_Allreduce(s, r, c, t, o, comm) == MPI_SUCCESS ? BAGUA_SUCCESS : BAGUA_ERR_TRANSPORT;
}

struct Contender {
  const char *name;
  AllreduceFn fn;
};

const Contender kContenders[] = {
    {"mpi", mpi_allreduce},
    {"bagua", bagua_allreduce},
};

struct Config {
  size_t min_bytes = 1024, max_bytes = 64u << 20;
  size_t factor = 4;
  int iters = 20, warmup = 5;
  std::string type = "float", op = "sum", algos = "mpi,bagua";
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
               "[-a mpi,bagua]\n",
               why);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Config parse_args(int argc, char **argv) {
  Config c;
  for (int opt; (opt = getopt(argc, argv, "b:e:f:n:w:d:o:a:h")) != -1;) {
    switch (opt) {
      case 'b': c.min_bytes = parse_size(optarg); break;
      case 'e': c.max_bytes = parse_size(optarg); break;
      case 'f': c.factor = std::max<size_t>(2, std::strtoul(optarg, nullptr, 10)); break;
      case 'n': c.iters = std::max(1, std::atoi(optarg)); break;
      case 'w': c.warmup = std::max(0, std::atoi(optarg)); break;
      case 'd': c.type = optarg; break;
      case 'o': c.op = optarg; break;
      case 'a': c.algos = optarg; break;
      default: usage("unknown option");
    }
  }
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

std::vector<Contender> select(const std::string &list) {
  std::vector<Contender> out;
  for (const Contender &c : kContenders)
    if (("," + list + ",").find(std::string(",") + c.name + ",") != std::string::npos)
      out.push_back(c);
  if (out.empty()) usage("no known algorithm in -a");
  return out;
}

// Inputs are small integers (exact in every type); only float and double
// are checked element by element, half types by a re-run through MPI.
void fill(std::vector<unsigned char> &buf, MPI_Datatype t, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) {
    const double v = double((rank + i) % 5);
    if (t == MPI_FLOAT) reinterpret_cast<float *>(buf.data())[i] = float(v);
    if (t == MPI_DOUBLE) reinterpret_cast<double *>(buf.data())[i] = v;
  }
}

struct Result {
  double seconds;
  long wrong;
};

// Times `iters` calls (after warmup); the slowest rank's time counts.
Result measure(const Contender &c, const Config &cfg, MPI_Datatype t, MPI_Op op, size_t count,
               size_t elem, const std::vector<unsigned char> &send,
               std::vector<unsigned char> &recv, const std::vector<unsigned char> &reference) {
  long failures = 0;
  for (int i = 0; i < cfg.warmup; ++i)
    failures += c.fn(send.data(), recv.data(), int(count), t, op, MPI_COMM_WORLD) != 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < cfg.iters; ++i)
    failures += c.fn(send.data(), recv.data(), int(count), t, op, MPI_COMM_WORLD) != 0;
  double elapsed = (MPI_Wtime() - start) / cfg.iters, slowest = 0;
  MPI_Allreduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  // #wrong: elements differing from MPI_Allreduce's result, plus failed calls.
  long wrong = failures;
  for (size_t i = 0; i < count * elem; i += elem)
    wrong += std::memcmp(&recv[i], &reference[i], elem) != 0;
  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return {slowest, total};
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const Config cfg = parse_args(argc, argv);
  size_t elem = 0;
  const MPI_Datatype t = datatype_of(cfg.type, &elem);
  const MPI_Op op = op_of(cfg.op);
  const std::vector<Contender> contenders = select(cfg.algos);
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;

  if (rank == 0) {
    std::printf("# bagua-bench: %d ranks, transport %s, %d iters (+%d warmup)\n", n,
                std::getenv("BAGUA_TRANSPORT") ? std::getenv("BAGUA_TRANSPORT") : "mpi", cfg.iters,
                cfg.warmup);
    std::printf("# %12s %12s %9s %5s %-8s %10s %8s %8s %7s %8s\n", "size(B)", "count", "type", "op",
                "algo", "time(us)", "algbw", "busbw", "#wrong", "vs mpi");
    std::printf("# %12s %12s %9s %5s %-8s %10s %8s %8s %7s %8s\n", "", "", "", "", "", "", "(GB/s)",
                "(GB/s)", "", "(x)");
  }
  for (size_t bytes = cfg.min_bytes; bytes <= cfg.max_bytes; bytes *= cfg.factor) {
    const size_t count = std::max<size_t>(1, bytes / elem);
    std::vector<unsigned char> send(count * elem), recv(count * elem), reference(count * elem);
    fill(send, t, count, rank);
    MPI_Allreduce(send.data(), reference.data(), int(count), t, op, MPI_COMM_WORLD);
    double mpi_seconds = 0;
    for (const Contender &c : contenders) {
      const Result r = measure(c, cfg, t, op, count, elem, send, recv, reference);
      if (std::strcmp(c.name, "mpi") == 0) mpi_seconds = r.seconds;
      const double algbw = double(count * elem) / r.seconds / 1e9;
      if (rank == 0) {
        std::printf("  %12zu %12zu %9s %5s %-8s %10.1f %8.2f %8.2f %7ld", count * elem, count,
                    cfg.type.c_str(), cfg.op.c_str(), c.name, r.seconds * 1e6, algbw,
                    algbw * bus_factor, r.wrong);
        if (mpi_seconds > 0) std::printf(" %8.2f", mpi_seconds / r.seconds);
        std::printf("\n");
      }
    }
  }
  MPI_Finalize();
  return 0;
}
