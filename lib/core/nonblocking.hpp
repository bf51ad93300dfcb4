// State of the nonblocking collectives (bagua_iallreduce, ...) of one user
// communicator: its own duplicate and transport (so the background work never
// matches the user's blocking bagua calls on the same communicator), the
// worker threads, and the call sequence for tags. Created collectively on the
// first nonblocking call, cached on the user's communicator as an MPI
// attribute, released when that communicator is freed or at MPI_Finalize.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <mutex>

#include "../algo/allreduce.hpp"
#include "options.hpp"
#include "worker_pool.hpp"

namespace bagua {

class NonblockingComm {
 public:
  // Most nonblocking calls in flight per communicator: distinct tags are
  // guaranteed up to 2^15 of them, and each in-flight call holds a thread.
  static constexpr int kMaxInFlight = 1024;

  static Status get(MPI_Comm user_comm, NonblockingComm **out);
  ~NonblockingComm();
  NonblockingComm(const NonblockingComm &) = delete;
  NonblockingComm &operator=(const NonblockingComm &) = delete;

  const Options &options() const { return options_; }
  int size() const;

  using Body = std::function<Status(AlgoContext &ctx)>;
  // Starts `body` on a worker thread with the next context on `channel`, and
  // returns a generalized request that completes when it returns.
  Status start(Channel channel, Body body, MPI_Request *request);

 private:
  NonblockingComm(MPI_Comm dup, Options options, std::unique_ptr<Transport> transport);
  Status check_usable();

  const MPI_Comm dup_;
  const Options options_;
  std::unique_ptr<Transport> transport_;
  std::mutex mutex_;  // guards the fields below
  uint32_t sequence_ = 0;
  int in_flight_ = 0;
  Status broken_ = BAGUA_SUCCESS;
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace bagua
