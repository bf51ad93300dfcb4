// What a communicator costs as ranks grow: for each family, on fresh
// duplicates of MPI_COMM_WORLD, the first call (which sets up bagua's state
// for the communicator: its duplicate, transport, agreed options and the
// family's own state) and the next one, timed as the slowest rank saw them,
// and the memory that --comms such communicators, kept alive at once, add per
// communicator (the largest rank's growth, less that of a plain MPI_Comm_dup
// measured the same way): resident pages (which count the shared-memory
// pages MPI touches for a new peer) and heap bytes in use (malloc, which
// bagua's own state lives in). MPI_Allreduce on a fresh duplicate is the peer
// row: what MPI itself keeps for a communicator that has carried messages.
// Every call's result is checked
// against its closed form (each rank contributes rank + 1 in every element:
// constant buffers, which q8's min-max blocks encode exactly), so the run
// is also a smoke test of every family at the launched rank count; it exits
// 1 on a wrong result or a failed call.
//
//   mpirun -np N bench-comm-setup [--comms 8] [--count 1024] [--node-size 8]
//
// Columns: ranks, family, first call ms, next call ms, setup ms (first
// less next), resident and heap KiB per communicator over MPI_Comm_dup's.
#include <malloc.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bagua.h"

namespace {

struct Config {
  int comms = 8;
  int count = 1024;
  int node_size = 8;
};

Config parse(int argc, char **argv) {
  Config c;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--comms") c.comms = value;
    if (flag == "--count") c.count = value;
    if (flag == "--node-size") c.node_size = value;
  }
  if (c.comms < 1 || c.count < 1 || c.node_size < 1) {
    std::fprintf(stderr, "bench-comm-setup: --comms, --count and --node-size must be >= 1\n");
    std::exit(2);
  }
  return c;
}

int world_rank() {
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

long resident_kib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Bytes malloc has handed out and not taken back (small blocks and mmapped
// large ones).
long heap_kib() {
  const struct mallinfo2 m = mallinfo2();
  return long((m.uordblks + m.hblkhd) / 1024);
}

// A family's call on `comm`: buf holds rank + 1 everywhere on entry; returns
// whether the call succeeded with its closed-form result.
using FamilyCall = std::function<bool(MPI_Comm comm, std::vector<float> &buf)>;

struct Family {
  const char *name;
  FamilyCall call;
  const char *env_name = nullptr;  // a setting this row runs under
  const char *env_value = nullptr;
  // What a program calls before it frees such a communicator.
  int (*release)(MPI_Comm comm) = nullptr;
};

bool all_equal(const std::vector<float> &buf, double want) {
  for (float x : buf)
    if (x != float(want)) return false;
  return true;
}

double world_sum() {
  const double n = world_size();
  return n * (n + 1) / 2;
}

bool exact_allreduce(MPI_Comm comm, std::vector<float> &buf) {
  const int rc =
      bagua_allreduce(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT, MPI_SUM, comm);
  return rc == BAGUA_SUCCESS && all_equal(buf, world_sum());
}

bool mpi_allreduce(MPI_Comm comm, std::vector<float> &buf) {
  const int rc = MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT, MPI_SUM, comm);
  return rc == MPI_SUCCESS && all_equal(buf, world_sum());
}

bool q8_allreduce(MPI_Comm comm, std::vector<float> &buf) {
  const int rc = bagua_allreduce_alg(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT, MPI_SUM,
                                     comm, BAGUA_ALGORITHM_Q8);
  return rc == BAGUA_SUCCESS && all_equal(buf, world_sum());
}

bool iallreduce(MPI_Comm comm, std::vector<float> &buf) {
  MPI_Request request;
  if (bagua_iallreduce(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT, MPI_SUM, comm,
                       &request) != BAGUA_SUCCESS)
    return false;
  return MPI_Wait(&request, MPI_STATUS_IGNORE) == MPI_SUCCESS && all_equal(buf, world_sum());
}

// All ranks in one group (P = n, no deadline in the way: see main).
bool partial_reduce(MPI_Comm comm, std::vector<float> &buf) {
  bagua_group_info info;
  const int rc = bagua_partial_reduce(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT,
                                      world_size(), comm, &info);
  const double mean = world_sum() / world_size();
  return rc == BAGUA_SUCCESS && info.size == world_size() && all_equal(buf, mean);
}

// Round 0 of the ring mode: the mean of the distinct ranks among r-1, r, r+1.
bool decentralized(MPI_Comm comm, std::vector<float> &buf) {
  const int n = world_size(), r = world_rank();
  const int rc = bagua_decentralized_average(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT,
                                             BAGUA_PEER_RING, 0, 1, comm);
  std::vector<int> ranks = {r};
  for (int peer : {(r + n - 1) % n, (r + 1) % n})
    if (peer != r && (ranks.size() < 2 || ranks[1] != peer)) ranks.push_back(peer);
  double sum = 0;
  for (int x : ranks) sum += x + 1;
  const double want = sum / double(ranks.size());
  if (rc != BAGUA_SUCCESS) return false;
  for (float x : buf)
    if (std::fabs(x - want) > 1e-5 * want) return false;
  return true;
}

struct Row {
  double first_ms = 0, next_ms = 0;
  long kib_per_comm = 0, heap_kib_per_comm = 0;
  bool ok = true;
};

double max_over_ranks(double x) {
  double out;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

// `comms` duplicates, each through its first and next call (none for a
// plain dup), all alive when memory is read, then freed.
Row measure(const Config &c, const Family *f) {
  Row row;
  std::vector<MPI_Comm> comms(size_t(c.comms));
  MPI_Barrier(MPI_COMM_WORLD);
  const long before = resident_kib(), heap_before = heap_kib();
  double first = 0, next = 0;
  for (MPI_Comm &comm : comms) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (!f) continue;
    for (double *t : {&first, &next}) {
      std::vector<float> buf(size_t(c.count), float(world_rank() + 1));
      MPI_Barrier(MPI_COMM_WORLD);
      const auto start = std::chrono::steady_clock::now();
      row.ok = f->call(comm, buf) && row.ok;
      *t += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  row.kib_per_comm = long(max_over_ranks(double(resident_kib() - before)) / c.comms);
  row.heap_kib_per_comm = long(max_over_ranks(double(heap_kib() - heap_before)) / c.comms);
  row.first_ms = max_over_ranks(first / c.comms);
  row.next_ms = max_over_ranks(next / c.comms);
  for (MPI_Comm &comm : comms) {
    if (f && f->release) row.ok = f->release(comm) == BAGUA_SUCCESS && row.ok;
    MPI_Comm_free(&comm);
  }
  int ok = row.ok, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  row.ok = all_ok;
  return row;
}

// measure() under the family's setting.
Row run_row(const Config &c, const Family &f) {
  if (f.env_name) setenv(f.env_name, f.env_value, 1);
  const Row row = measure(c, &f);
  if (f.env_name) unsetenv(f.env_name);
  return row;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  const Config c = parse(argc, argv);
  // Partial groups close at P = n only: no deadline closes one early on a
  // loaded machine (the bench checks the group's size).
  setenv("BAGUA_PARTIAL_DEADLINE_MS", "600000", 1);
  setenv("BAGUA_PARTIAL_DEADLINE_MAX_MS", "600000", 1);
  const std::string node_size = std::to_string(c.node_size);
  const Family families[] = {
      {"MPI_Allreduce (peer)", mpi_allreduce},
      {"allreduce", exact_allreduce},
      {"allreduce q8", q8_allreduce},
      {"allreduce q8 hierarchical", q8_allreduce, "BAGUA_HIERARCHICAL", "1"},
      {"iallreduce", iallreduce},
      {"partial", partial_reduce, nullptr, nullptr, bagua_partial_leave},
      {"decentralized ring", decentralized},
  };
  const bool print = world_rank() == 0;
  if (print)
    std::printf(
        "# ranks %d, %d communicators per family, %d floats, nodes of %d (hierarchical)\n"
        "%6s %-26s %10s %10s %10s %14s %14s\n",
        world_size(), c.comms, c.count, c.node_size, "ranks", "family", "first_ms", "next_ms",
        "setup_ms", "KiB_per_comm", "heap_KiB_comm");
  setenv("BAGUA_NODE_SIZE", node_size.c_str(), 1);
  // One communicator of each family first, so the process's one-time
  // set-up (bagua's and MPI's) is in no row.
  const Config once{1, c.count, c.node_size};
  for (const Family &f : families) run_row(once, f);
  const Row dup = measure(c, nullptr);
  bool all_ok = true;
  for (const Family &f : families) {
    const Row row = run_row(c, f);
    all_ok = all_ok && row.ok;
    if (print)
      std::printf("%6d %-26s %10.2f %10.2f %10.2f %14ld %14ld%s\n", world_size(), f.name,
                  row.first_ms, row.next_ms, row.first_ms - row.next_ms,
                  row.kib_per_comm - dup.kib_per_comm,
                  row.heap_kib_per_comm - dup.heap_kib_per_comm,
                  row.ok ? "" : "  WRONG RESULT OR FAILED CALL");
  }
  if (print)
    std::printf("# MPI_Comm_dup alone: %ld KiB resident, %ld KiB heap per communicator\n",
                dup.kib_per_comm, dup.heap_kib_per_comm);
  bagua_finalize();
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
