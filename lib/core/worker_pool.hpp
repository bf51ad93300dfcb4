// Threads that run blocking jobs (bucket collectives, nonblocking
// collectives). A submitted job never waits for another job to finish: when
// no thread is idle, a new one is started. This is what makes out-of-order
// readiness safe: two ranks that start the same buckets in different orders
// still make progress on all of them, because every job in flight holds a
// thread. Threads are kept for reuse and joined when the pool is destroyed.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bagua {

class WorkerPool {
 public:
  WorkerPool() = default;
  // Finishes the queued and running jobs, then joins every thread.
  ~WorkerPool();
  WorkerPool(const WorkerPool &) = delete;
  WorkerPool &operator=(const WorkerPool &) = delete;

  // Runs `job` on an idle thread, or on a new one if none is idle. The job
  // must not throw.
  void submit(std::function<void()> job);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace bagua
