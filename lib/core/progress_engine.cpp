#include "progress_engine.hpp"

#include <algorithm>
#include <new>
#include <optional>
#include <thread>
#include <utility>

#include "../base/live_objects.hpp"
#include "../transport/mpi_waits_yield.hpp"

namespace bagua {
namespace {

// Stacks kept for reuse: enough for a burst of small calls; the rest are
// unmapped when their task finishes.
constexpr size_t kSpareStacks = 16;
// Rounds in which no task finished before each round also yields the core
// (ranks often share cores).
constexpr int kSpinRounds = 64;

// The time the task now switched out on this thread asked to sleep until.
thread_local std::optional<ProgressEngine::Clock::time_point> sleep_request;

}  // namespace

void TaskGroup::add() {
  std::lock_guard lock(mutex_);
  ++pending_;
}

// Notifies under the lock: the waiter may free the group once it returns.
void TaskGroup::done() {
  std::lock_guard lock(mutex_);
  if (--pending_ == 0) idle_.notify_all();
}

void TaskGroup::wait() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return pending_ == 0; });
}

ProgressEngine::ProgressEngine() : thread_(&ProgressEngine::run, this) {
  live_add(Live::engine, 1);
}

ProgressEngine::~ProgressEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  live_add(Live::engine, -1);
}

Status ProgressEngine::prepare(std::function<void()> body, TaskGroup &group, Task *task) {
  // The group counts the task until its body (the fiber's function, which
  // holds the ticket) is destroyed: after it ran, or unstarted.
  struct Ticket {
    explicit Ticket(TaskGroup &g) : group(g) { group.add(); }
    ~Ticket() { group.done(); }
    Ticket(const Ticket &) = delete;
    Ticket &operator=(const Ticket &) = delete;
    TaskGroup &group;
  };
  try {
    body = [body = std::move(body), ticket = std::make_shared<Ticket>(group)] { body(); };
    FiberStack stack;
    {
      std::lock_guard lock(mutex_);
      if (!spare_stacks_.empty()) {
        stack = std::move(spare_stacks_.back());
        spare_stacks_.pop_back();
      }
    }
    if (stack.empty()) stack = FiberStack::map();
    *task = std::make_unique<Fiber>(std::move(body), std::move(stack));
  } catch (const std::bad_alloc &) {
    return fail(BAGUA_ERR_OUT_OF_MEMORY, "no memory for the stack of a background call's task");
  }
  return BAGUA_SUCCESS;
}

void ProgressEngine::start(Task task) {
  {
    std::lock_guard lock(mutex_);
    started_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ProgressEngine::sleep_until(Clock::time_point until) {
  if (!in_fiber()) {
    std::this_thread::sleep_until(until);
    return;
  }
  sleep_request = until;
  fiber_yield();
}

void ProgressEngine::wake_sleepers() {
  {
    std::lock_guard lock(mutex_);
    wake_sleepers_ = true;
  }
  wake_.notify_one();
}

bool ProgressEngine::take_started(std::deque<Task> &running, std::vector<Sleeper> &sleeping) {
  std::unique_lock lock(mutex_);
  const auto woken = [&] { return wake_sleepers_ || !started_.empty(); };
  if (running.empty() && sleeping.empty()) {
    wake_.wait(lock, [&] { return stopping_ || woken(); });
  } else if (running.empty()) {
    // A stopping engine still waits for its sleepers' time.
    const auto first = std::min_element(sleeping.begin(), sleeping.end(),
                                        [](auto &a, auto &b) { return a.until < b.until; });
    wake_.wait_until(lock, first->until, woken);
  }
  for (Task &t : started_) running.push_back(std::move(t));
  started_.clear();
  // Sleepers due (or all, when woken) run again, in the order they slept.
  const auto now = Clock::now();
  const bool wake_all = std::exchange(wake_sleepers_, false);
  std::vector<Sleeper> still;
  for (Sleeper &s : sleeping) {
    if (wake_all || s.until <= now)
      running.push_back(std::move(s.task));
    else
      still.push_back(std::move(s));
  }
  sleeping = std::move(still);
  return !running.empty() || !sleeping.empty() || !stopping_;
}

void ProgressEngine::recycle(Task task) {
  FiberStack stack = task->release_stack();
  task.reset();
  std::lock_guard lock(mutex_);
  if (spare_stacks_.size() < kSpareStacks) spare_stacks_.push_back(std::move(stack));
}

void ProgressEngine::run() {
  std::deque<Task> running;
  std::vector<Sleeper> sleeping;
  int idle_rounds = 0;
  MpiWaitsYield yield;
  while (take_started(running, sleeping)) {
    // Tasks in flight: callers waiting on them in MPI leave this thread the core.
    yield.hold(!running.empty());
    // One round: each task runs until its next wait polls once (or it asks
    // to sleep); finished ones leave, the others go to the back in order.
    bool finished = false;
    for (size_t i = running.size(); i > 0; --i) {
      Task task = std::move(running.front());
      running.pop_front();
      if (task->resume()) {
        recycle(std::move(task));
        finished = true;
      } else if (sleep_request) {
        sleeping.push_back({*std::exchange(sleep_request, std::nullopt), std::move(task)});
      } else {
        running.push_back(std::move(task));
      }
    }
    idle_rounds = finished ? 0 : idle_rounds + 1;
    if (idle_rounds > kSpinRounds && !running.empty()) std::this_thread::yield();
    // About to wait for work: MPI waits may spin again.
    if (running.empty()) yield.hold(false);
  }
}

}  // namespace bagua
