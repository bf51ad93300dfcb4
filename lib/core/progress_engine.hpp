// The thread that runs a communicator's background work (nonblocking
// collectives, buckets, asynchronous averaging, partial reduce's controller)
// as tasks, one engine per communicator shared by its features: each task is a
// fiber (base/fiber.hpp) that gives the thread back at every transport wait,
// so every task in flight progresses, whatever order two ranks start them
// in, and 1024 calls in flight take this one thread, not one each. Tasks run
// in the order they were started until their first wait, then round-robin,
// one poll each. A task may also sleep (sleep_until): it is not polled until
// its time comes or wake_sleepers() is called, and an engine with only
// sleeping tasks sleeps too. Each feature counts its own tasks in a
// TaskGroup and waits for them alone before it frees what they use.
#pragma once

#include <chrono>
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

// The tasks of one owner on an engine it may share: prepared and not yet
// finished (or dropped unstarted). The owner waits for them before it frees
// what they use.
class TaskGroup {
 public:
  TaskGroup() = default;
  TaskGroup(const TaskGroup &) = delete;
  TaskGroup &operator=(const TaskGroup &) = delete;
  // Waits until no task of the group is left. Not from one of its tasks.
  void wait();

 private:
  friend class ProgressEngine;
  void add();
  void done();

  std::mutex mutex_;
  std::condition_variable idle_;
  int pending_ = 0;
};

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

  // A task of `group` that runs `body` (which must not throw), or
  // BAGUA_ERR_OUT_OF_MEMORY when no stack can be had.
  Status prepare(std::function<void()> body, TaskGroup &group, Task *task);
  // Hands a prepared task to the engine's thread.
  void start(Task task);

  using Clock = std::chrono::steady_clock;
  // Inside a task: gives the thread back until `until` or the next
  // wake_sleepers(), whichever comes first (the task re-checks why it
  // slept). Outside a task: sleeps the calling thread until `until`.
  static void sleep_until(Clock::time_point until);
  // Ends the sleep of every task sleeping now.
  void wake_sleepers();

  // The threads an engine runs: one, however many tasks and features share it.
  static constexpr int kThreads = 1;

 private:
  struct Sleeper {
    Clock::time_point until;
    Task task;
  };
  void run();
  // Moves the started tasks into `running`, and the sleepers whose time has
  // come (all of them after wake_sleepers) back to it; while none runs,
  // waits for a start, a wake or the first sleeper's time. False once the
  // engine stops and no task is left.
  bool take_started(std::deque<Task> &running, std::vector<Sleeper> &sleeping);
  // Keeps a finished task's stack for the next task.
  void recycle(Task task);

  std::mutex mutex_;  // guards started_, spare_stacks_, stopping_, wake_sleepers_
  std::condition_variable wake_;
  std::deque<Task> started_;
  std::vector<FiberStack> spare_stacks_;
  bool stopping_ = false;
  bool wake_sleepers_ = false;
  std::thread thread_;
};

}  // namespace bagua
