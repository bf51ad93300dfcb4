#include "partial_state.hpp"

#include <chrono>
#include <thread>

#include "../transport/mpi_bounded.hpp"

namespace bagua {
namespace {

Status check_options(const PartialOptions &o, int size) {
  if (o.controller_rank >= size)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "BAGUA_PARTIAL_CONTROLLER=%d is not a rank of a communicator of size %d",
                o.controller_rank, size);
  if (o.group_size > size)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "BAGUA_PARTIAL_GROUP_SIZE=%d exceeds the communicator size %d", o.group_size, size);
  return BAGUA_SUCCESS;
}

// An idle controller sleeps this long between steps: short next to a group's
// latency, long enough not to steal a core from the ranks.
constexpr auto kIdlePoll = std::chrono::microseconds(100);

PartialPolicy policy_of(const PartialOptions &o) {
  return {o.min_group_size, double(o.deadline_ms), double(o.deadline_min_ms),
          double(o.deadline_max_ms), o.tau};
}

// The controller's task and this rank's calls share the control transport:
// over a duplicate of comm's, or connected over comm's transport on a
// communicator formed without MPI (control_comm MPI_COMM_NULL).
Status create_control(Communicator &comm, MPI_Comm *control_comm,
                      std::unique_ptr<Transport> *control) {
  *control_comm = MPI_COMM_NULL;
  if (!comm.has_mpi_group()) return comm.connect_transport(control);
  BAGUA_TRY(bounded_dup(comm.dup_comm(), comm.options().timeout_ms, control_comm));
  const Status s =
      create_transport(comm.options(), *control_comm, /*shared_by_threads=*/true, control);
  // A timed-out setup collective is still posted on control_comm (comm.cpp).
  if (s != BAGUA_SUCCESS && s != BAGUA_ERR_TIMEOUT) free_dup(control_comm);
  return s;
}

}  // namespace

Status PartialState::get(Communicator &comm, PartialState **out) {
  return comm.extension(ExtensionKey::partial, &PartialState::create, out);
}

Status PartialState::create(Communicator &comm, std::unique_ptr<PartialState> *out) {
  const PartialOptions &o = comm.options().partial;
  BAGUA_TRY(require_thread_multiple("partial reduce (its controller's thread)"));
  BAGUA_TRY(check_options(o, comm.size()));
  MPI_Comm control_comm;
  std::unique_ptr<Transport> control;
  BAGUA_TRY(create_control(comm, &control_comm, &control));
  std::unique_ptr<PartialState> state(new PartialState(control_comm, std::move(control),
                                                       o.controller_rank, comm.options().timeout_ms,
                                                       comm.engine()));
  if (comm.rank() == o.controller_rank) BAGUA_TRY(state->start_controller(policy_of(o)));
  *out = std::move(state);
  return BAGUA_SUCCESS;
}

PartialState::PartialState(MPI_Comm control_comm, std::unique_ptr<Transport> control,
                           int controller_rank, int64_t timeout_ms,
                           std::shared_ptr<ProgressEngine> engine)
    : control_comm_(control_comm),
      control_(std::move(control)),
      controller_rank_(controller_rank),
      timeout_ms_(timeout_ms),
      assignment_words_(partial_wire::assignment_words(control_->size())),
      engine_(std::move(engine)) {}

PartialState::~PartialState() {
  if (!left_) leave();
  if (controller_) stop_controller();
  const bool late_bytes_possible = control_->late_messages_possible();
  control_.reset();
  // As for the communicator's duplicate (comm.cpp): late bytes must not reach
  // a communicator that reuses this one's context.
  if (!late_bytes_possible && control_comm_ != MPI_COMM_NULL) free_dup(&control_comm_);
}

Status PartialState::start_controller(const PartialPolicy &policy) {
  ProgressEngine::Task task;
  BAGUA_TRY(engine_->prepare([this] { serve_controller(); }, controller_task_, &task));
  controller_ = std::make_unique<PartialController>(*control_, policy);
  engine_->start(std::move(task));
  return BAGUA_SUCCESS;
}

// The controller's event loop, until stopped; a failed step ends it (waiting
// ranks then time out).
void PartialState::serve_controller() {
  Status s = controller_->begin();
  while (s == BAGUA_SUCCESS && !controller_stop_) {
    bool progressed = false;
    s = controller_->step(&progressed);
    if (s == BAGUA_SUCCESS && !progressed)
      ProgressEngine::sleep_until(ProgressEngine::Clock::now() + kIdlePoll);
  }
  controller_->end();
  controller_done_ = true;
}

void PartialState::stop_controller() {
  const Deadline deadline = Deadline::after_ms(timeout_ms_);
  controller_->forget_quiescence();  // an earlier moment when every rank had left does not count
  while (!controller_->quiescent() && !controller_done_ && !deadline.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  controller_stop_ = true;
  controller_task_.wait();  // the task ends within one idle poll
  controller_.reset();
}

Status PartialState::send_to_controller(partial_wire::Kind kind, int group_size,
                                        const Deadline &deadline) {
  request_words_ = {kind, group_size, iteration_};
  Request send;
  BAGUA_TRY(control_->isend(request_words_.data(), sizeof(request_words_), controller_rank_,
                            partial_wire::to_controller(), &send));
  return wait(*control_, send, deadline);
}

Status PartialState::ready(int group_size, PlannedGroup *out) {
  const Deadline deadline = Deadline::after_ms(timeout_ms_);
  left_ = false;  // the controller counts this rank again once it reads the message
  Request recv;
  BAGUA_TRY(control_->irecv(assignment_words_.data(), assignment_words_.size() * sizeof(int64_t),
                            controller_rank_, partial_wire::to_member(), &recv));
  Status s = send_to_controller(partial_wire::kReady, group_size, deadline);
  if (s == BAGUA_SUCCESS) s = wait(*control_, recv, deadline);
  if (s != BAGUA_SUCCESS) {
    control_->abandon(&recv);
    if (s == BAGUA_ERR_TIMEOUT)
      fail(s,
           "bagua_partial_reduce: no group formed within BAGUA_TIMEOUT_MS=%lld ms (controller "
           "on rank %d; did a rank stop calling without bagua_partial_leave?)",
           static_cast<long long>(timeout_ms_), controller_rank_);
    return s;
  }
  ++iteration_;
  return partial_wire::decode_assignment(assignment_words_, control_->size(), control_->rank(),
                                         out);
}

Status PartialState::leave() {
  left_ = true;
  return send_to_controller(partial_wire::kLeave, 0, Deadline::after_ms(timeout_ms_));
}

}  // namespace bagua
