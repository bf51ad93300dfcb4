// Per-communicator state of partial reduce: the controller's own duplicated
// communicator and MPI transport (on a communicator formed without MPI, no
// duplicate and a ucx transport connected over the communicator's; used from
// two threads on the controller rank, hence MPI_THREAD_MULTIPLE), the controller on its rank
// (its event loop a task of the communicator's progress engine), and this rank's iteration count.
// An extension of the Communicator, so it goes away with it.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <vector>

#include "../algo/partial_controller.hpp"
#include "comm.hpp"
#include "progress_engine.hpp"

namespace bagua {

class PartialState final : public CommExtension {
 public:
  // The state of `comm`, created on first use (collective over comm).
  static Status get(Communicator &comm, PartialState **out);

  // Leaves if this rank has not; on the controller rank waits (up to the
  // timeout) until every rank has left, then stops the controller.
  ~PartialState() override;
  PartialState(const PartialState &) = delete;
  PartialState &operator=(const PartialState &) = delete;

  bool has_left() const { return left_; }
  // Tells the controller this rank is ready with groups of `group_size` (a
  // rank that had left takes part again) and waits for the group it was put in.
  Status ready(int group_size, PlannedGroup *out);
  // Tells the controller this rank makes no calls until its next ready().
  Status leave();
  Bytes &scratch() { return scratch_; }

 private:
  static Status create(Communicator &comm, std::unique_ptr<PartialState> *out);
  PartialState(MPI_Comm control_comm, std::unique_ptr<Transport> control, int controller_rank,
               int64_t timeout_ms, std::shared_ptr<ProgressEngine> engine);
  Status send_to_controller(partial_wire::Kind kind, int group_size, const Deadline &deadline);
  // The controller rank's controller and the task that runs its loop.
  Status start_controller(const PartialPolicy &policy);
  void serve_controller();
  // Waits (up to the timeout) until every rank has left, then ends the task.
  void stop_controller();

  MPI_Comm control_comm_;
  std::unique_ptr<Transport> control_;
  std::unique_ptr<PartialController> controller_;  // on the controller rank only
  std::atomic<bool> controller_stop_{false}, controller_done_{false};
  const int controller_rank_;
  const int64_t timeout_ms_;
  int64_t iteration_ = 0;
  bool left_ = false;
  partial_wire::RequestWords request_words_{};
  std::vector<int64_t> assignment_words_;
  Bytes scratch_;
  std::shared_ptr<ProgressEngine> engine_;  // the user communicator's
  TaskGroup controller_task_;               // on the controller rank
};

}  // namespace bagua
