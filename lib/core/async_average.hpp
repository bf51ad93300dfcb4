// Asynchronous model averaging (doc/decentralized.md): a task on a progress
// engine (progress_engine.hpp) averages a registered buffer with all ranks
// every interval while the caller keeps computing, sleeping on the engine in
// between. It uses a private communicator state (its own duplicate and
// transport), so its messages never match the caller's. A device buffer is
// staged: each read and update goes through a page-locked copy, a slot of
// the private communicator's staging (lib/mc/staging_pool.hpp) held for the
// averager's life.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../base/dtype.hpp"
#include "../mc/staging_pool.hpp"
#include "comm.hpp"
#include "progress_engine.hpp"

namespace bagua {

class AsyncAverager {
 public:
  // Collective over user_comm; the task starts running at once. `memory`
  // is where buf lives.
  static Status create(void *buf, size_t count, DType t, Memory memory, int interval_ms,
                       MPI_Comm user_comm, std::unique_ptr<AsyncAverager> *out);
  // Stops the task (as abort) and waits for it to end, then frees the
  // private communicator state and the staging of a device buffer.
  ~AsyncAverager();
  AsyncAverager(const AsyncAverager &) = delete;
  AsyncAverager &operator=(const AsyncAverager &) = delete;

  void lock() { weights_.lock(); }
  void unlock() { weights_.unlock(); }

  // Collective: the ranks' tasks stop after the same round.
  Status abort();
  // Collective: a barrier among the ranks, then the task starts again.
  Status resume();
  // Rounds whose average this rank applied so far.
  long long rounds() const { return rounds_.load(std::memory_order_relaxed); }

 private:
  AsyncAverager(void *buf, size_t count, DType t, int interval_ms,
                std::unique_ptr<Communicator> comm, std::shared_ptr<ProgressEngine> engine);

  Status stage_on_device();
  Status start();
  void run();
  // Sleeps on the engine for one interval, or less if a stop is requested.
  void wait_interval();
  bool stop_requested();
  Status average(const void *src, void *dst, size_t count, DType t);
  Status barrier();
  Status average_once(bool *stop);
  Status weights_on_host(void **out);
  Status weights_write_back();

  void *const buf_;
  const size_t count_;
  const DType dtype_;
  const int interval_ms_;
  // Used by the task while it runs, by the caller while it does not.
  std::unique_ptr<Communicator> comm_;
  Bytes temp_, reduced_;
  // A device buffer's page-locked copy, taken at create (a round allocates
  // nothing); given back before comm_ (its pool) goes.
  StagedCopy staged_;

  std::mutex weights_;  // the caller's lock: held while buf is read or updated
  std::mutex control_;  // guards stop_requested_ and exited_
  std::condition_variable exited_cv_;
  bool stop_requested_ = false;
  bool exited_ = true;
  std::atomic<long long> rounds_{0};
  std::shared_ptr<ProgressEngine> engine_;  // the user communicator's
  TaskGroup tasks_;                         // the averaging task
};

}  // namespace bagua
