// Asynchronous model averaging (algorithms.md section 5): a background thread
// averages a registered buffer with all ranks every interval while the caller
// keeps computing. The thread owns a duplicate of the user's communicator and
// a transport of its own, so its messages never match the caller's.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../algo/allreduce.hpp"
#include "options.hpp"

namespace bagua {

class AsyncAverager {
 public:
  // Collective over user_comm; the thread starts running at once.
  static Status create(void *buf, size_t count, DType t, int interval_ms, MPI_Comm user_comm,
                       std::unique_ptr<AsyncAverager> *out);
  // Stops the thread (as abort) and frees the transport and communicator.
  ~AsyncAverager();
  AsyncAverager(const AsyncAverager &) = delete;
  AsyncAverager &operator=(const AsyncAverager &) = delete;

  void lock() { weights_.lock(); }
  void unlock() { weights_.unlock(); }

  // Collective: the ranks' threads stop after the same round.
  Status abort();
  // Collective: a barrier among the ranks, then the thread starts again.
  Status resume();

 private:
  AsyncAverager(void *buf, size_t count, DType t, int interval_ms, MPI_Comm dup, Options options,
                std::unique_ptr<Transport> transport);

  void start();
  void run();
  AlgoContext next_context();
  Status allreduce(const void *src, void *dst, size_t count, DType t, ReduceOp op);
  Status agree_on_stop(bool *stop);
  Status average_once();
  Status failure() const;

  void *const buf_;
  const size_t count_;
  const DType dtype_;
  const int interval_ms_;
  const MPI_Comm dup_;
  const Options options_;
  std::unique_ptr<Transport> transport_;
  std::vector<unsigned char> scratch_, temp_, reduced_;
  uint32_t sequence_ = 0;

  std::mutex weights_;  // the caller's lock: held while buf is read or updated
  std::mutex control_;  // guards stop_requested_
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::thread thread_;
  std::atomic<bool> exited_{true};
  // Written by the thread before it exits, read after join.
  Status failure_ = BAGUA_SUCCESS;
  std::string failure_message_;
};

}  // namespace bagua
