// State of the nonblocking collectives (bagua_iallreduce, ...) of one user
// communicator: a private communicator state (its own duplicate and
// transport, so the background work never matches the user's blocking bagua
// calls on the same communicator), the worker threads, and the call sequence
// for tags. Created collectively on the first nonblocking call as an
// extension of the user's Communicator, so it is released with it (when the
// user's communicator is freed, or at MPI_Finalize).
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <mutex>

#include "../algo/allreduce.hpp"
#include "comm.hpp"
#include "worker_pool.hpp"

namespace bagua {

class NonblockingComm final : public CommExtension {
 public:
  // Most nonblocking calls in flight per communicator: distinct tags are
  // guaranteed up to 2^15 of them, and each in-flight call holds a thread.
  static constexpr int kMaxInFlight = 1024;

  static Status get(MPI_Comm user_comm, NonblockingComm **out);
  // Finishes the calls in flight, then frees the private communicator state.
  ~NonblockingComm() override;
  NonblockingComm(const NonblockingComm &) = delete;
  NonblockingComm &operator=(const NonblockingComm &) = delete;

  const Options &options() const { return comm_->options(); }
  int size() const { return comm_->size(); }

  using Body = std::function<Status(AlgoContext &ctx)>;
  // Starts `body` on a worker thread with the next context on `channel`, and
  // returns a generalized request that completes when it returns.
  Status start(Channel channel, Body body, MPI_Request *request);

 private:
  explicit NonblockingComm(std::unique_ptr<Communicator> comm);
  static Status create(MPI_Comm user_comm, std::unique_ptr<NonblockingComm> *out);
  Status check_usable();

  std::unique_ptr<Communicator> comm_;  // used by the workers; outlives pool_
  std::mutex mutex_;                    // guards the fields below
  uint32_t sequence_ = 0;
  int in_flight_ = 0;
  Status broken_ = BAGUA_SUCCESS;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace bagua
