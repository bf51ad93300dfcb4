// The thread that runs a communicator's background calls (nonblocking
// collectives, buckets) as tasks: each task is a fiber (base/fiber.hpp) that
// gives the thread back at every transport wait, so every task in flight
// progresses, whatever order two ranks start them in, and 1024 calls in
// flight take this one thread, not one each. Tasks run in the order they
// were started until their first wait, then round-robin, one poll each.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../base/fiber.hpp"
#include "../base/status.hpp"

namespace bagua {

class ProgressEngine {
 public:
  // A task prepared to start: its fiber and stack exist, so starting it
  // cannot fail.
  using Task = std::unique_ptr<Fiber>;

  ProgressEngine();
  // Finishes the started tasks, then joins the thread.
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine &) = delete;
  ProgressEngine &operator=(const ProgressEngine &) = delete;

  // A task that runs `body` (which must not throw), or
  // BAGUA_ERR_OUT_OF_MEMORY when no stack can be had.
  Status prepare(std::function<void()> body, Task *task);
  // Hands a prepared task to the engine's thread.
  void start(Task task);

  // The threads an engine runs: one, however many tasks are in flight.
  static constexpr int kThreads = 1;

 private:
  void run();
  // Moves the started tasks into `running`, sleeping while there are none;
  // false once the engine stops and no task is left.
  bool take_started(std::deque<Task> &running);
  // Keeps a finished task's stack for the next task.
  void recycle(Task task);

  std::mutex mutex_;  // guards started_, spare_stacks_, stopping_
  std::condition_variable wake_;
  std::deque<Task> started_;
  std::vector<FiberStack> spare_stacks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace bagua
