#include "nonblocking.hpp"

#include <set>
#include <string>
#include <vector>

#include "../transport/locked_transport.hpp"
#include "../transport/mpi_transport.hpp"
#include "../transport/ucx_transport.hpp"
#include "runtime.hpp"

namespace bagua {
namespace {

// Attribute keyvals and the registry of live states (freed at MPI_Finalize
// if the user never frees their communicators), as in runtime.cpp.
std::mutex registry_mutex;
std::set<NonblockingComm *> live;
int state_keyval = MPI_KEYVAL_INVALID;
int finalize_keyval = MPI_KEYVAL_INVALID;

bool registry_take(NonblockingComm *c) {
  std::lock_guard lock(registry_mutex);
  return live.erase(c) == 1;
}

int delete_state(MPI_Comm, int, void *value, void *) {
  auto *c = static_cast<NonblockingComm *>(value);
  if (registry_take(c)) delete c;
  return MPI_SUCCESS;
}

int on_finalize(MPI_Comm, int, void *, void *) {
  std::set<NonblockingComm *> states;
  {
    std::lock_guard lock(registry_mutex);
    states.swap(live);
  }
  for (NonblockingComm *c : states) delete c;
  std::lock_guard lock(registry_mutex);
  MPI_Comm_free_keyval(&state_keyval);
  MPI_Comm_free_keyval(&finalize_keyval);
  return MPI_SUCCESS;
}

void ensure_keyvals() {
  std::lock_guard lock(registry_mutex);
  if (state_keyval != MPI_KEYVAL_INVALID) return;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_state, &state_keyval, nullptr);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &on_finalize, &finalize_keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, nullptr);
}

// Worker threads complete the requests (MPI_Grequest_complete) while the
// caller makes MPI calls.
Status check_thread_level() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    return fail(BAGUA_ERR_THREAD_LEVEL,
                "nonblocking collectives complete on background threads and need "
                "MPI_THREAD_MULTIPLE (initialise MPI with MPI_Init_thread)");
  return BAGUA_SUCCESS;
}

bool breaks_comm(Status s) {
  return s == BAGUA_ERR_TIMEOUT || s == BAGUA_ERR_TRANSPORT || s == BAGUA_ERR_MISMATCH ||
         s == BAGUA_ERR_CORRUPT_DATA;
}

// The outcome a generalized request reports when waited for.
struct Outcome {
  Status result = BAGUA_SUCCESS;
  std::string message;
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

int free_outcome(void *extra) {
  delete static_cast<Outcome *>(extra);
  return MPI_SUCCESS;
}

// A started collective cannot be cancelled; it completes on its own.
int cancel_nothing(void *, int) { return MPI_SUCCESS; }

}  // namespace

Status NonblockingComm::get(MPI_Comm user_comm, NonblockingComm **out) {
  BAGUA_TRY(runtime_ensure());
  BAGUA_TRY(check_thread_level());
  if (user_comm == MPI_COMM_NULL) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
  int is_inter = 0;
  if (MPI_Comm_test_inter(user_comm, &is_inter) != MPI_SUCCESS || is_inter)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is not a valid intra-communicator");
  ensure_keyvals();
  void *value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(user_comm, state_keyval, &value, &found);
  if (found) {
    *out = static_cast<NonblockingComm *>(value);
    return BAGUA_SUCCESS;
  }
  Options options;
  BAGUA_TRY(options_load(&options));
  MPI_Comm dup;
  if (MPI_Comm_dup(user_comm, &dup) != MPI_SUCCESS)
    return fail(BAGUA_ERR_TRANSPORT, "MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  std::unique_ptr<Transport> inner;
  const Status s = options.transport == TransportKind::ucx ? ucx_transport_create(dup, &inner)
                                                           : mpi_transport_create(dup, &inner);
  if (s != BAGUA_SUCCESS) {
    MPI_Comm_free(&dup);
    return s;
  }
  auto *c = new NonblockingComm(dup, options, std::make_unique<LockedTransport>(std::move(inner)));
  {
    std::lock_guard lock(registry_mutex);
    live.insert(c);
  }
  MPI_Comm_set_attr(user_comm, state_keyval, c);
  *out = c;
  return BAGUA_SUCCESS;
}

NonblockingComm::NonblockingComm(MPI_Comm dup, Options options,
                                 std::unique_ptr<Transport> transport)
    : dup_(dup),
      options_(options),
      transport_(std::move(transport)),
      pool_(std::make_unique<WorkerPool>()) {}

NonblockingComm::~NonblockingComm() {
  pool_.reset();  // calls in flight finish first
  transport_.reset();
  MPI_Comm comm = dup_;
  MPI_Comm_free(&comm);
}

int NonblockingComm::size() const { return transport_->size(); }

Status NonblockingComm::check_usable() {
  if (broken_ != BAGUA_SUCCESS)
    return fail(BAGUA_ERR_COMM_BROKEN,
                "an earlier nonblocking call failed with '%s'; free this communicator",
                bagua_error_string(broken_));
  if (in_flight_ >= kMaxInFlight)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%d nonblocking calls are already in flight on this communicator (the limit); "
                "wait for some first",
                in_flight_);
  return BAGUA_SUCCESS;
}

Status NonblockingComm::start(Channel channel, Body body, MPI_Request *request) {
  std::lock_guard lock(mutex_);
  BAGUA_TRY(check_usable());
  auto *outcome = new Outcome;
  if (MPI_Grequest_start(&query_outcome, &free_outcome, &cancel_nothing, outcome, request) !=
      MPI_SUCCESS) {
    delete outcome;
    return fail(BAGUA_ERR_TRANSPORT, "MPI_Grequest_start failed");
  }
  const TagSpace tags = TagSpace::make(channel, sequence_++);
  ++in_flight_;
  // The job owns its scratch; it touches the outcome only before completing
  // the request (MPI may free the outcome right after).
  pool_->submit([this, tags, body = std::move(body), outcome, req = *request]() mutable {
    std::vector<unsigned char> scratch;
    AlgoContext ctx{*transport_, tags, Deadline::after_ms(options_.timeout_ms), scratch,
                    options_.segment_bytes};
    Status s = BAGUA_ERR_INTERNAL;
    try {
      clear_last_error();
      s = body(ctx);
    } catch (const std::bad_alloc &) {
      s = fail(BAGUA_ERR_OUT_OF_MEMORY, "allocation failed in a nonblocking call");
    }
    outcome->result = s;
    if (s != BAGUA_SUCCESS) outcome->message = last_error_message();
    {
      std::lock_guard guard(mutex_);
      --in_flight_;
      if (breaks_comm(s) && broken_ == BAGUA_SUCCESS) broken_ = s;
    }
    MPI_Grequest_complete(req);
  });
  return BAGUA_SUCCESS;
}

}  // namespace bagua
