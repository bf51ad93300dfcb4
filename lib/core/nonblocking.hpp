// State of the nonblocking collectives (bagua_iallreduce, ...) of one user
// communicator: a private communicator state (its own duplicate and
// transport, so the background work never matches the user's blocking bagua
// calls on the same communicator), the calls' tasks on the user
// communicator's progress engine, and the call sequence for tags. Created collectively on the first
// nonblocking call as an extension of the user's Communicator, so it is released with it (when the
// user's communicator is freed, or at MPI_Finalize).
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <mutex>

#include "../mc/staging_pool.hpp"
#include "call.hpp"
#include "comm.hpp"
#include "progress_engine.hpp"
#include "select.hpp"

namespace bagua {

// Called on the engine's thread when a call has ended (bagua_complete_fn).
struct Completion {
  void (*fn)(void *arg, int status, const char *message) = nullptr;
  void *arg = nullptr;
};

class NonblockingComm final : public CommExtension {
 public:
  static Status get(MPI_Comm user_comm, NonblockingComm **out);
  // Finishes the calls in flight, then frees the private communicator state.
  ~NonblockingComm() override;
  NonblockingComm(const NonblockingComm &) = delete;
  NonblockingComm &operator=(const NonblockingComm &) = delete;

  // Starts `call` as a task of the progress engine in the next tag slot, and returns a
  // generalized request that completes when it has run. Device buffers are
  // staged: the input is taken once the work queued on the user's stream
  // before this call is done (an event), copied to a page-locked slot of
  // the pool, reduced on the host, and copied back before the request
  // completes. `done` is called first; with it, request may be nullptr (no
  // MPI request).
  Status start(const Call &call, Completion done, MPI_Request *request);

 private:
  NonblockingComm(std::unique_ptr<Communicator> comm, std::shared_ptr<ProgressEngine> engine);
  static Status create(MPI_Comm user_comm, std::shared_ptr<ProgressEngine> engine,
                       std::unique_ptr<NonblockingComm> *out);
  Status check_usable();
  // A staged copy for a device call, ready once the user's stream reaches
  // the call.
  Status take_staging(const Call &call, StagedCopy *staged);
  // The task of a call: its collective, staged through `staged` when not
  // null.
  Status run(const Call &call, const ScheduleInfo &schedule, uint64_t tag_slot, StagedCopy *staged);
  Status run_staged(AlgoContext &ctx, const Call &call, const ScheduleInfo &schedule,
                    StagedCopy &staged);

  std::unique_ptr<Communicator> comm_;  // used by the tasks; outlives them
  std::mutex mutex_;                    // guards next_slot_
  uint64_t next_slot_ = 0;
  // Calls started and not yet waited for (their requests not yet freed).
  std::shared_ptr<std::atomic<int>> unwaited_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<ProgressEngine> engine_;  // the user communicator's
  TaskGroup tasks_;                         // the calls' tasks
};

}  // namespace bagua
