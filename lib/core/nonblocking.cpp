#include "nonblocking.hpp"

#include <memory>
#include <string>
#include <vector>

#include "../mc/cuda_stream.hpp"
#include "run.hpp"
#include "runtime.hpp"

namespace bagua {
namespace {

// The progress engine's thread completes the requests
// (MPI_Grequest_complete) while the caller makes MPI calls, whatever the
// transport.
constexpr const char *kFeature = "a nonblocking collective (its progress thread)";

// The outcome a generalized request reports when waited for, and the count
// of its communicator's calls not yet waited for (shared: the request may be
// freed after its communicator).
struct Outcome {
  Status result = BAGUA_SUCCESS;
  std::string message;
  std::shared_ptr<std::atomic<int>> unwaited;
  MPI_Request request = MPI_REQUEST_NULL;
};

// MPI_Wait/MPI_Test call this on the waiting thread: a failure sets that
// thread's bagua_last_error() and returns MPI_ERR_OTHER.
int query_outcome(void *extra, MPI_Status *status) {
  const auto *outcome = static_cast<Outcome *>(extra);
  MPI_Status_set_elements(status, MPI_BYTE, 0);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  status->MPI_ERROR = MPI_SUCCESS;
  if (outcome->result == BAGUA_SUCCESS) return MPI_SUCCESS;
  fail(outcome->result, "%s (%s)", outcome->message.c_str(), bagua_error_string(outcome->result));
  status->MPI_ERROR = MPI_ERR_OTHER;
  return MPI_ERR_OTHER;
}

// MPI calls it when the request is freed: by the MPI_Wait/MPI_Test that
// reports it complete, or MPI_Request_free; the task, when its call has no
// request.
int free_outcome(void *extra) {
  auto *outcome = static_cast<Outcome *>(extra);
  outcome->unwaited->fetch_sub(1);
  delete outcome;
  return MPI_SUCCESS;
}

// A started collective cannot be cancelled; it completes on its own.
int cancel_nothing(void *, int) { return MPI_SUCCESS; }

}  // namespace

Status NonblockingComm::get(MPI_Comm user_comm, NonblockingComm **out) {
  BAGUA_TRY(runtime_ensure());
  BAGUA_TRY(require_thread_multiple(kFeature));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(user_comm, &c));
  const auto make = [user_comm](Communicator &user, std::unique_ptr<NonblockingComm> *created) {
    return create(user_comm, user.engine(), created);
  };
  return c->extension(ExtensionKey::nonblocking, make, out);
}

Status NonblockingComm::create(MPI_Comm user_comm, std::shared_ptr<ProgressEngine> engine,
                               std::unique_ptr<NonblockingComm> *out) {
  std::unique_ptr<Communicator> comm;
  BAGUA_TRY(Communicator::create_private(user_comm, kFeature, &comm));
  out->reset(new NonblockingComm(std::move(comm), std::move(engine)));
  return BAGUA_SUCCESS;
}

NonblockingComm::NonblockingComm(std::unique_ptr<Communicator> comm,
                                 std::shared_ptr<ProgressEngine> engine)
    : comm_(std::move(comm)), engine_(std::move(engine)) {}

// Runs inside MPI_Finalize when the user never freed their communicator: the
// calls in flight are bounded by BAGUA_TIMEOUT_MS, so finishing them ends.
// comm_ is freed after this communicator's tasks ended, with the other members.
NonblockingComm::~NonblockingComm() { tasks_.wait(); }

Status NonblockingComm::check_usable() {
  BAGUA_TRY(comm_->check_usable());
  // At most BAGUA_MAX_IN_FLIGHT calls not yet waited for: each running call
  // holds a task (a stack) and a tag slot (every tag layout has at least
  // 1024 slots). Counting the calls the caller has not waited for, rather
  // than those still running, makes ranks that start and wait for the same
  // calls refuse the same ones, however their calls' completions interleave.
  const int unwaited = unwaited_->load();
  if (unwaited >= comm_->options().max_in_flight) {
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%d nonblocking calls on this communicator are in flight (started and not yet "
                "waited for: the limit, BAGUA_MAX_IN_FLIGHT); wait for some first",
                unwaited);
  }
  return BAGUA_SUCCESS;
}

Status NonblockingComm::take_staging(const Call &call, StagedCopy *staged) {
  StagingPool *pool = nullptr;
  BAGUA_TRY(comm_->staging(&pool));
  BAGUA_TRY(StagedCopy::take(*pool, call.count * dtype_size(call.dtype), staged));
  return staged->mark_ready(cuda_stream_of(call.comm));
}

Status NonblockingComm::run_staged(AlgoContext &ctx, const Call &call, const ScheduleInfo &schedule,
                                   StagedCopy &staged) {
  const size_t bytes = call.count * dtype_size(call.dtype);
  BAGUA_TRY(staged.fill(call.src, bytes));
  BAGUA_TRY(comm_->record(
      run_flat(ctx, staged_on_host(call, staged.host()), schedule, comm_->options())));
  return stage_out(staged, call.dst, bytes);
}

Status NonblockingComm::run(const Call &call, const ScheduleInfo &schedule, uint64_t tag_slot,
                            StagedCopy *staged) {
  Bytes scratch;
  AlgoContext ctx = comm_->call_in_slot(tag_slot, scratch);
  Status s = BAGUA_ERR_INTERNAL;
  try {
    clear_last_error();
    if (staged != nullptr)
      s = run_staged(ctx, call, schedule, *staged);
    else
      s = with_aligned_buffers(call, [&](const Call &aligned_call) {
        return comm_->record(run_flat(ctx, aligned_call, schedule, comm_->options()));
      });
  } catch (const std::bad_alloc &) {
    s = fail(BAGUA_ERR_OUT_OF_MEMORY, "allocation failed in a nonblocking call");
  }
  if (staged != nullptr) staged->release();
  return s;
}

Status NonblockingComm::start(const Call &call, Completion done, MPI_Request *request) {
  // Device buffers are staged, so every call runs a host schedule.
  const ScheduleInfo *schedule = nullptr;
  BAGUA_TRY(comm_->policy().select(call.family, call.wire, call.count * dtype_size(call.dtype),
                                   Memory::host, &schedule));
  std::lock_guard lock(mutex_);
  // A refused call still takes its slot, so the calls after it pair with the
  // same calls of ranks that did not refuse (those time out on this one).
  const uint64_t tag_slot = next_slot_++;
  BAGUA_TRY(check_usable());
  // A device call's staged copy, shared with the task's body (a copyable
  // function); the body gives the slot back before the task ends, while the
  // pool surely lives. Host calls have none.
  std::shared_ptr<StagedCopy> staged;
  if (call.memory == Memory::cuda && call.count > 0) {
    staged = std::make_shared<StagedCopy>();
    BAGUA_TRY(take_staging(call, staged.get()));
  }
  auto outcome = std::make_unique<Outcome>(Outcome{BAGUA_SUCCESS, {}, unwaited_});
  // The task touches the outcome only before completing the request (MPI
  // may free the outcome right after); without a request it frees it.
  ProgressEngine::Task task;
  const auto body = [this, call, schedule, tag_slot, staged, done, out = outcome.get()] {
    out->result = run(call, *schedule, tag_slot, staged.get());
    if (call.feedback != nullptr) call.feedback->release();
    if (out->result != BAGUA_SUCCESS) out->message = last_error_message();
    if (done.fn != nullptr) done.fn(done.arg, out->result, out->message.c_str());
    if (out->request == MPI_REQUEST_NULL) {
      free_outcome(out);
      return;
    }
    MPI_Request req = out->request;
    MPI_Grequest_complete(req);
  };
  Status s = engine_->prepare(body, tasks_, &task);
  if (s == BAGUA_SUCCESS && request != nullptr &&
      MPI_Grequest_start(&query_outcome, &free_outcome, &cancel_nothing, outcome.get(),
                         &outcome->request) != MPI_SUCCESS)
    s = fail(BAGUA_ERR_TRANSPORT, "MPI_Grequest_start failed");
  if (s != BAGUA_SUCCESS) return s;
  Outcome *started = outcome.release();
  if (request != nullptr) *request = started->request;
  unwaited_->fetch_add(1);
  engine_->start(std::move(task));
  return BAGUA_SUCCESS;
}

}  // namespace bagua
