// Communicators formed without an MPI launcher (bagua_comm_create_oob).
// Started without mpirun: `bagua-test-oob N` forks N copies of itself with
// their rank and the group size in the environment, each a one-rank MPI
// world (singleton MPI_Init), and exits 0 iff every copy did. Each copy's
// out-of-band allgather goes through files in a shared directory (written
// under a temporary name, then renamed). A rank checks: refused arguments
// and a failing callback, then exact, compressed and nonblocking
// allreduces, decentralized, low-precision and asynchronous averaging,
// bucketed communication (with automatic bucket size) and
// partial reduce against closed-form values, bagua_comm_free, hierarchical
// mode refused, and a handle whose state bagua_finalize freed.
#include <bagua.h>
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

int checks = 0;
int failures = 0;
int my_rank = 0;

void check(bool ok, const char *what) {
  ++checks;
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s (last error: %s)\n", my_rank, what, bagua_last_error());
}

// The call failed with `status` and a message that contains `text`.
void check_refused(int rc, int status, const char *text, const char *what) {
  check(rc == status && std::strstr(bagua_last_error(), text) != nullptr, what);
}

// ---- the out-of-band allgather over files ---------------------------------

struct FileGroup {
  fs::path dir;
  int rank = 0;
  int size = 0;
  int round = 0;         // calls so far: names the files of the next one
  bool fail = false;     // the callback reports a failure
  bool reverse = false;  // the callback gathers in reverse rank order
};

fs::path round_file(const FileGroup &g, int round, int rank) {
  return g.dir / (std::to_string(round) + "." + std::to_string(rank));
}

// Reads `bytes` bytes of `path` once a peer has renamed it into place (whole);
// gives up after about two minutes, so a lost peer ends the test.
bool read_when_present(const fs::path &path, char *out, size_t bytes) {
  for (int polls = 0; polls < 120000; ++polls) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      in.read(out, std::streamsize(bytes));
      return size_t(in.gcount()) == bytes;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

int file_allgather(const void *send, void *recv, size_t bytes, void *ctx) {
  auto &g = *static_cast<FileGroup *>(ctx);
  if (g.fail) return 7;
  const int round = g.round++;
  const fs::path mine = round_file(g, round, g.rank);
  const fs::path tmp = mine.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(static_cast<const char *>(send), std::streamsize(bytes));
    if (!out) return 1;
  }
  fs::rename(tmp, mine);
  for (int p = 0; p < g.size; ++p)
    if (!read_when_present(round_file(g, round, g.reverse ? g.size - 1 - p : p),
                           static_cast<char *>(recv) + size_t(p) * bytes, bytes))
      return 2;
  return 0;
}

// ---- one rank ---------------------------------------------------------------

void check_bad_arguments(FileGroup &g) {
  MPI_Comm comm = MPI_COMM_SELF;
  bagua_oob oob = BAGUA_OOB_INITIALIZER;
  oob.rank = g.rank;
  oob.size = g.size;
  oob.allgather = file_allgather;
  oob.ctx = &g;
  check_refused(bagua_comm_create_oob(nullptr, &comm), BAGUA_ERR_INVALID_ARGUMENT, "oob is NULL",
                "NULL oob");
  check(comm == MPI_COMM_NULL, "a refused call leaves MPI_COMM_NULL");
  check_refused(bagua_comm_create_oob(&oob, nullptr), BAGUA_ERR_INVALID_ARGUMENT, "comm is NULL",
                "NULL comm");
  bagua_oob bad = oob;
  bad.struct_size = sizeof(bagua_oob) - sizeof(void *);
  check_refused(bagua_comm_create_oob(&bad, &comm), BAGUA_ERR_INVALID_ARGUMENT, "struct_size",
                "short struct_size");
  bad = oob;
  bad.rank = g.size;
  check_refused(bagua_comm_create_oob(&bad, &comm), BAGUA_ERR_INVALID_ARGUMENT, "oob->rank",
                "rank == size");
  bad.rank = -1;
  check_refused(bagua_comm_create_oob(&bad, &comm), BAGUA_ERR_INVALID_ARGUMENT, "oob->rank",
                "rank -1");
  bad = oob;
  bad.size = 0;
  check_refused(bagua_comm_create_oob(&bad, &comm), BAGUA_ERR_INVALID_ARGUMENT, "oob->size",
                "size 0");
  bad = oob;
  bad.allgather = nullptr;
  check_refused(bagua_comm_create_oob(&bad, &comm), BAGUA_ERR_INVALID_ARGUMENT, "allgather",
                "NULL allgather");
  // Every rank's callback fails at its first call, so none waits for another.
  g.fail = true;
  check_refused(bagua_comm_create_oob(&oob, &comm), BAGUA_ERR_TRANSPORT,
                "out-of-band allgather (bagua_oob.allgather) failed (7)", "failing callback");
  check(comm == MPI_COMM_NULL, "a failed creation leaves MPI_COMM_NULL");
  g.fail = false;
  // Every rank sees the same misplaced ranks (none with 1 rank).
  g.reverse = g.size > 1;
  if (g.reverse)
    check_refused(bagua_comm_create_oob(&oob, &comm), BAGUA_ERR_INVALID_ARGUMENT,
                  "gather in rank order", "callback out of rank order");
  g.reverse = false;
  check_refused(bagua_comm_free(&comm), BAGUA_SUCCESS, "", "freeing MPI_COMM_NULL");
  MPI_Comm self = MPI_COMM_SELF;
  check_refused(bagua_comm_free(&self), BAGUA_ERR_INVALID_ARGUMENT, "not made by",
                "freeing MPI_COMM_SELF");
}

// Every element of `v` within `tolerance` of `want`.
void check_all(const std::vector<float> &v, float want, float tolerance, const char *what) {
  size_t wrong = 0;
  for (const float x : v) wrong += !(std::fabs(x - want) <= tolerance);
  check(wrong == 0, what);
}

// Rank r's element i: small integers, so sums and averages are exact.
float exact_input(int rank, size_t i) { return float(rank + 1) + float(i % 7); }

void check_exact(MPI_Comm comm, int n, size_t count) {
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = exact_input(my_rank, i);
  check(bagua_allreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, comm) ==
            BAGUA_SUCCESS,
        "bagua_allreduce");
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong += recv[i] != float(n * (n + 1) / 2) + float(n) * float(i % 7);
  check(wrong == 0, "exact allreduce result");
}

// Smooth values in [-1, 1] that differ per rank, and their exact average.
double smooth(int rank, size_t i) { return std::sin(0.01 * double(i) + 1.3 * rank); }
double smooth_average(int n, size_t i) {
  double sum = 0;
  for (int r = 0; r < n; ++r) sum += double(float(smooth(r, i)));
  return sum / n;
}

using Allreduce = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

// The average within `tolerance` (the codec's error on inputs in [-1, 1],
// loosely bounded).
void check_compressed(MPI_Comm comm, int n, Allreduce fn, double tolerance, const char *name) {
  const size_t count = 5000;
  std::vector<float> send(count), recv(count);
  for (size_t i = 0; i < count; ++i) send[i] = float(smooth(my_rank, i));
  check(fn(send.data(), recv.data(), int(count), MPI_FLOAT, BAGUA_AVG, comm) == BAGUA_SUCCESS,
        name);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong += !(std::fabs(double(recv[i]) - smooth_average(n, i)) <= tolerance);
  check(wrong == 0, name);
}

// Equal inputs everywhere: the scaled sign of a constant block is the block.
void check_sign(MPI_Comm comm) {
  const int count = 1000;
  bagua_sign_state_t state = nullptr;
  check(bagua_sign_state_create(count, comm, &state) == BAGUA_SUCCESS, "sign state");
  std::vector<float> send(count, 0.5f), recv(count);
  check(bagua_allreduce_sign(send.data(), recv.data(), count, MPI_FLOAT, BAGUA_AVG, comm, state) ==
            BAGUA_SUCCESS,
        "bagua_allreduce_sign");
  check_all(recv, 0.5f, 1e-6f, "sign allreduce result");
  bagua_sign_state_destroy(&state);
}

void check_nonblocking(MPI_Comm comm, int n) {
  const size_t count = 3000;
  std::vector<float> send(count), recv(count), send2(count, float(my_rank)), recv2(count);
  for (size_t i = 0; i < count; ++i) send[i] = exact_input(my_rank, i);
  MPI_Request reqs[2];
  check(bagua_iallreduce(send.data(), recv.data(), int(count), MPI_FLOAT, MPI_SUM, comm,
                         &reqs[0]) == BAGUA_SUCCESS,
        "bagua_iallreduce");
  check(bagua_iallreduce(send2.data(), recv2.data(), int(count), MPI_FLOAT, MPI_MAX, comm,
                         &reqs[1]) == BAGUA_SUCCESS,
        "second bagua_iallreduce");
  check(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall");
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong +=
        recv[i] != float(n * (n + 1) / 2) + float(n) * float(i % 7) || recv2[i] != float(n - 1);
  check(wrong == 0, "nonblocking allreduce results");
}

void check_decentralized(MPI_Comm comm, int n) {
  const int count = 777;
  std::vector<float> send(count, float(my_rank)), recv(count);
  check(bagua_decentralized_average(send.data(), recv.data(), count, MPI_FLOAT, BAGUA_PEER_ALL, 0,
                                    1, comm) == BAGUA_SUCCESS,
        "bagua_decentralized_average");
  check_all(recv, float(n - 1) / 2.0f, 0.0f, "decentralized average result");
}

// Equal weights everywhere stay equal under low-precision averaging (every
// rank's difference to its neighbours is 0) and asynchronous averaging.
void check_stateful_averages(MPI_Comm comm, bool async) {
  std::vector<float> buf(3000, 1.5f);
  bagua_lowprec_t state = nullptr;
  check(bagua_lowprec_create(buf.data(), int(buf.size()), MPI_FLOAT, 1, comm, &state) ==
                BAGUA_SUCCESS &&
            bagua_lowprec_step(state, buf.data()) == BAGUA_SUCCESS,
        "low-precision averaging");
  bagua_lowprec_destroy(&state);
  bagua_async_t handle = nullptr;
  if (async)
    check(bagua_async_average_create(buf.data(), int(buf.size()), MPI_FLOAT, 1, comm, &handle) ==
                  BAGUA_SUCCESS &&
              bagua_async_average_destroy(&handle) == BAGUA_SUCCESS,
          "asynchronous averaging");
  check_all(buf, 1.5f, 1e-6f, "low-precision and asynchronous average results");
}

// Two tensors of `count` elements averaged by the bucket workers (which run
// over a transport connected through the communicator's own) for `rounds`
// rounds; with automatic bucket size, the step times are agreed over it too.
void check_buckets(MPI_Comm comm, int n, size_t count, int auto_bytes, int rounds) {
  std::vector<float> a(count, float(my_rank)), b(count, float(2 * my_rank));
  bagua_bucket_config config = BAGUA_BUCKET_CONFIG_INITIALIZER;
  config.auto_bucket_bytes = auto_bytes;
  bagua_bucket_comm_t bc = nullptr;
  int ids[2] = {0, 0}, buckets = 0;
  bool ok =
      bagua_bucket_comm_create(comm, &config, &bc) == BAGUA_SUCCESS &&
      bagua_bucket_comm_register(bc, a.data(), int(count), MPI_FLOAT, &ids[0]) == BAGUA_SUCCESS &&
      bagua_bucket_comm_register(bc, b.data(), int(count), MPI_FLOAT, &ids[1]) == BAGUA_SUCCESS &&
      bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS;
  for (int round = 0; round < rounds && ok; ++round)
    ok = bagua_bucket_comm_mark_ready(bc, ids[0]) == BAGUA_SUCCESS &&
         bagua_bucket_comm_mark_ready(bc, ids[1]) == BAGUA_SUCCESS &&
         bagua_bucket_comm_wait_all(bc) == BAGUA_SUCCESS;
  check(ok, "bucketed communicator");
  bagua_bucket_comm_destroy(&bc);
  check_all(a, float(n - 1) / 2.0f, 0.0f, "bucket average of the first tensor");
  check_all(b, float(n - 1), 0.0f, "bucket average of the second tensor");
}

// One group of every rank (equal inputs, so any group's average is 1.5),
// formed by the controller over its own transport; then every rank leaves.
void check_partial(MPI_Comm comm, int n) {
  std::vector<float> send(500, 1.5f), recv(500);
  bagua_group_info info;
  check(bagua_partial_reduce(send.data(), recv.data(), int(send.size()), MPI_FLOAT, n, comm,
                             &info) == BAGUA_SUCCESS &&
            info.size == n && bagua_partial_leave(comm) == BAGUA_SUCCESS,
        "partial reduce");
  check_all(recv, 1.5f, 0.0f, "partial reduce result");
}

// Hierarchical mode (set on every rank) is refused: its nodes come from MPI.
// bagua_finalize frees the state: calls on the handle are refused, and
// bagua_comm_free still frees it.
void check_hierarchical_and_finalize(const bagua_oob &oob) {
  MPI_Comm comm = MPI_COMM_NULL;
  setenv("BAGUA_HIERARCHICAL", "1", 1);
  check(bagua_comm_create_oob(&oob, &comm) == BAGUA_SUCCESS, "second bagua_comm_create_oob");
  unsetenv("BAGUA_HIERARCHICAL");
  float x = 1.0f;
  check_refused(bagua_allreduce_q8(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                BAGUA_ERR_INVALID_ARGUMENT, "needs a communicator of MPI processes",
                "hierarchical mode refused");
  bagua_finalize();
  check_refused(bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                BAGUA_ERR_INVALID_ARGUMENT, "bagua_finalize freed",
                "a call after bagua_finalize refused");
  check(bagua_comm_free(&comm) == BAGUA_SUCCESS && comm == MPI_COMM_NULL,
        "bagua_comm_free after bagua_finalize");
}

int run_rank(int rank, int size, const char *dir) {
  my_rank = rank;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  FileGroup g{dir, rank, size};
  check_bad_arguments(g);
  bagua_oob oob = BAGUA_OOB_INITIALIZER;
  oob.rank = rank;
  oob.size = size;
  oob.allgather = file_allgather;
  oob.ctx = &g;
  MPI_Comm comm = MPI_COMM_NULL;
  check(bagua_comm_create_oob(&oob, &comm) == BAGUA_SUCCESS, "bagua_comm_create_oob");
  if (comm != MPI_COMM_NULL) {
    int mpi_size = 0;
    MPI_Comm_size(comm, &mpi_size);
    check(mpi_size == 1, "MPI sees one rank on the handle");
    MPI_Count bytes = 0;  // a one-rank group would send nothing
    check(bagua_allreduce_bytes(BAGUA_ALGORITHM_EXACT, 1000, MPI_FLOAT, comm, &bytes) ==
                  BAGUA_SUCCESS &&
              bytes > 0,
          "bagua_allreduce_bytes counts the group");
    check_exact(comm, size, 7);
    check_exact(comm, size, 100000);  // ring
    check_compressed(comm, size, bagua_allreduce_q8, 4.0 / 510 + 1e-6, "q8");
    check_compressed(comm, size, bagua_allreduce_q4, 4.0 / 30 + 1e-6, "q4");
    check_compressed(comm, size, bagua_allreduce_fp16, 2 * std::ldexp(1.0, -10), "fp16");
    check_compressed(comm, size, bagua_allreduce_bf16, 2 * std::ldexp(1.0, -7), "bf16");
    check_sign(comm);
    if (provided == MPI_THREAD_MULTIPLE) check_nonblocking(comm, size);
    check_decentralized(comm, size);
    check_stateful_averages(comm, provided == MPI_THREAD_MULTIPLE);
    if (provided == MPI_THREAD_MULTIPLE) {
      check_buckets(comm, size, 1000, 0, 1);
      // 1.2 MB tensors: the 1 MiB cap forms two buckets, 4 MiB and above
      // one, so the tuner times both (3 steps each) and agrees.
      check_buckets(comm, size, 300000, 1, 8);
    }
    if (provided == MPI_THREAD_MULTIPLE) check_partial(comm, size);
    check_exact(comm, size, 1000);  // still usable after a refusal
    check(bagua_comm_free(&comm) == BAGUA_SUCCESS && comm == MPI_COMM_NULL, "bagua_comm_free");
  }
  check_hierarchical_and_finalize(oob);
  bagua_finalize();
  MPI_Finalize();
  std::printf("rank %d: %d of %d checks passed\n", rank, checks - failures, checks);
  return failures == 0 ? 0 : 1;
}

// ---- the launcher -------------------------------------------------------------

// Starts `size` copies of this program; once one fails, stops the others
// (they would wait for it in the callback).
int launch(const char *self, int size) {
  const fs::path dir = fs::temp_directory_path() / ("bagua-oob-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::vector<pid_t> children;
  for (int rank = 0; rank < size; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("BAGUA_OOB_TEST_RANK", std::to_string(rank).c_str(), 1);
      setenv("BAGUA_OOB_TEST_SIZE", std::to_string(size).c_str(), 1);
      setenv("BAGUA_OOB_TEST_DIR", dir.c_str(), 1);
      execl(self, self, static_cast<char *>(nullptr));
      _exit(127);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (size_t left = children.size(); left > 0; --left) {
    int status = 0;
    waitpid(-1, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    if (failed++ == 0)
      for (const pid_t pid : children) kill(pid, SIGTERM);
  }
  fs::remove_all(dir);
  std::printf("%d ranks: %s\n", size, failed == 0 ? "passed" : "FAILED");
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  const char *rank = std::getenv("BAGUA_OOB_TEST_RANK");
  if (rank != nullptr)
    return run_rank(std::atoi(rank), std::atoi(std::getenv("BAGUA_OOB_TEST_SIZE")),
                    std::getenv("BAGUA_OOB_TEST_DIR"));
  if (argc != 2 || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: %s RANKS\n", argv[0]);
    return 2;
  }
  return launch("/proc/self/exe", std::atoi(argv[1]));
}
