#include "progress_engine.hpp"

#include <new>
#include <utility>

namespace bagua {
namespace {

// Stacks kept for reuse: enough for a burst of small calls; the rest are
// unmapped when their task finishes.
constexpr size_t kSpareStacks = 16;
// Rounds in which no task finished before each round also yields the core
// (ranks often share cores).
constexpr int kSpinRounds = 64;

}  // namespace

ProgressEngine::ProgressEngine() : thread_(&ProgressEngine::run, this) {}

ProgressEngine::~ProgressEngine() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

Status ProgressEngine::prepare(std::function<void()> body, Task *task) {
  try {
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

bool ProgressEngine::take_started(std::deque<Task> &running) {
  std::unique_lock lock(mutex_);
  if (running.empty()) wake_.wait(lock, [&] { return stopping_ || !started_.empty(); });
  for (Task &t : started_) running.push_back(std::move(t));
  started_.clear();
  return !running.empty();
}

void ProgressEngine::recycle(Task task) {
  FiberStack stack = task->release_stack();
  task.reset();
  std::lock_guard lock(mutex_);
  if (spare_stacks_.size() < kSpareStacks) spare_stacks_.push_back(std::move(stack));
}

void ProgressEngine::run() {
  std::deque<Task> running;
  int idle_rounds = 0;
  while (take_started(running)) {
    // One round: each task runs until its next wait polls once; finished
    // ones leave, the others go to the back in their order.
    bool finished = false;
    for (size_t i = running.size(); i > 0; --i) {
      Task task = std::move(running.front());
      running.pop_front();
      if (task->resume()) {
        recycle(std::move(task));
        finished = true;
      } else {
        running.push_back(std::move(task));
      }
    }
    idle_rounds = finished ? 0 : idle_rounds + 1;
    if (idle_rounds > kSpinRounds) std::this_thread::yield();
  }
}

}  // namespace bagua
