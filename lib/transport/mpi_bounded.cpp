#include "mpi_bounded.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "../base/fiber.hpp"
#include "../base/live_objects.hpp"
#include "transport.hpp"

namespace bagua {
namespace {

// A setup collective in flight: its request and the memory MPI may still
// write (the reduction buffers or the new communicator's handle).
struct Posted {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<int64_t> values;
  std::vector<int> lengths, offsets;
  std::vector<char> bytes;
  MPI_Comm dup = MPI_COMM_NULL;
};

std::mutex abandoned_mutex;
std::vector<std::unique_ptr<Posted>> abandoned;

// Polls `p` until it completes or `timeout_ms` passes; a timed-out one is
// kept (MPI still owns its buffers) and reported.
Status wait_posted(std::unique_ptr<Posted> &p, int64_t timeout_ms, const char *what) {
  const Deadline deadline = Deadline::after_ms(timeout_ms);
  for (int done = 0; !done;) {
    if (MPI_Test(&p->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return fail(BAGUA_ERR_TRANSPORT, "%s: MPI failed", what);
    if (done) break;
    if (deadline.expired()) {
      std::lock_guard lock(abandoned_mutex);
      abandoned.push_back(std::move(p));
      return fail(BAGUA_ERR_TIMEOUT,
                  "%s: another rank did not make the matching call within BAGUA_TIMEOUT_MS=%lld "
                  "ms (the first bagua call of each kind on a communicator is collective: "
                  "every rank must make it)",
                  what, static_cast<long long>(timeout_ms));
    }
    poll_pause();
  }
  return BAGUA_SUCCESS;
}

}  // namespace

Status bounded_allreduce_max(MPI_Comm comm, std::span<const int64_t> in, std::span<int64_t> out,
                             int64_t timeout_ms, const char *what) {
  auto p = std::make_unique<Posted>();
  p->values.assign(in.begin(), in.end());
  p->values.resize(2 * in.size());
  const int n = static_cast<int>(in.size());
  if (MPI_Iallreduce(p->values.data(), p->values.data() + n, n, MPI_INT64_T, MPI_MAX, comm,
                     &p->request) != MPI_SUCCESS)
    return fail(BAGUA_ERR_TRANSPORT, "%s: MPI_Iallreduce failed", what);
  BAGUA_TRY(wait_posted(p, timeout_ms, what));
  std::copy(p->values.begin() + n, p->values.end(), out.begin());
  return BAGUA_SUCCESS;
}

Status bounded_dup(MPI_Comm comm, int64_t timeout_ms, MPI_Comm *out) {
  auto p = std::make_unique<Posted>();
  if (MPI_Comm_idup(comm, &p->dup, &p->request) != MPI_SUCCESS)
    return fail(BAGUA_ERR_TRANSPORT, "MPI_Comm_idup failed");
  BAGUA_TRY(wait_posted(p, timeout_ms, "duplicating the communicator"));
  MPI_Comm_set_errhandler(p->dup, MPI_ERRORS_RETURN);
  *out = p->dup;
  live_add(Live::duplicate, 1);
  return BAGUA_SUCCESS;
}

void free_dup(MPI_Comm *dup) {
  MPI_Comm_free(dup);
  live_add(Live::duplicate, -1);
}

Status bounded_allgather_bytes(MPI_Comm comm, std::span<const char> mine, int64_t timeout_ms,
                               const char *what, std::vector<char> *all,
                               std::vector<int> *offsets) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  // Step 1: every rank's length.
  auto p = std::make_unique<Posted>();
  p->lengths.assign(size_t(size) + 1, 0);
  p->lengths[size_t(size)] = static_cast<int>(mine.size());
  if (MPI_Iallgather(&p->lengths[size_t(size)], 1, MPI_INT, p->lengths.data(), 1, MPI_INT, comm,
                     &p->request) != MPI_SUCCESS)
    return fail(BAGUA_ERR_TRANSPORT, "%s: MPI_Iallgather failed", what);
  BAGUA_TRY(wait_posted(p, timeout_ms, what));
  p->lengths.pop_back();
  // Step 2: the bytes, each rank's at the sum of the lengths before it.
  p->offsets.assign(size_t(size), 0);
  for (size_t r = 1; r < size_t(size); ++r) p->offsets[r] = p->offsets[r - 1] + p->lengths[r - 1];
  p->bytes.assign(mine.begin(), mine.end());
  p->bytes.resize(p->bytes.size() + size_t(p->offsets.back() + p->lengths.back()));
  if (MPI_Iallgatherv(p->bytes.data(), static_cast<int>(mine.size()), MPI_BYTE,
                      p->bytes.data() + mine.size(), p->lengths.data(), p->offsets.data(), MPI_BYTE,
                      comm, &p->request) != MPI_SUCCESS)
    return fail(BAGUA_ERR_TRANSPORT, "%s: MPI_Iallgatherv failed", what);
  BAGUA_TRY(wait_posted(p, timeout_ms, what));
  all->assign(p->bytes.begin() + static_cast<std::ptrdiff_t>(mine.size()), p->bytes.end());
  *offsets = p->offsets;
  return BAGUA_SUCCESS;
}

namespace {

int rank_of(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

}  // namespace

MpiExchange::MpiExchange(MPI_Comm comm, int64_t timeout_ms)
    : Exchange(rank_of(comm), size_of(comm)), comm_(comm), timeout_ms_(timeout_ms) {}

Status MpiExchange::allgather(std::span<const char> mine, const char *what, std::vector<char> *all,
                              std::vector<int> *offsets) {
  return bounded_allgather_bytes(comm_, mine, timeout_ms_, what, all, offsets);
}

Status MpiExchange::max(std::span<const int64_t> in, std::span<int64_t> out, const char *what) {
  return bounded_allreduce_max(comm_, in, out, timeout_ms_, what);
}

void bounded_release_completed() {
  std::lock_guard lock(abandoned_mutex);
  std::erase_if(abandoned, [](std::unique_ptr<Posted> &p) {
    int done = 0;
    MPI_Test(&p->request, &done, MPI_STATUS_IGNORE);
    if (done && p->dup != MPI_COMM_NULL) MPI_Comm_free(&p->dup);
    return done != 0;
  });
}

}  // namespace bagua
