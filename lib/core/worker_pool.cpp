#include "worker_pool.hpp"

namespace bagua {

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : threads_) t.join();
}

void WorkerPool::submit(std::function<void()> job) {
  std::lock_guard lock(mutex_);
  jobs_.push_back(std::move(job));
  // Every queued job must have a thread of its own: idle threads that have
  // been woken but not yet taken a job are still counted in idle_.
  if (idle_ < jobs_.size()) threads_.emplace_back(&WorkerPool::run, this);
  wake_.notify_one();
}

// Takes jobs until the pool stops and the queue is empty.
void WorkerPool::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace bagua
