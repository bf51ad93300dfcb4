// Stackful tasks on one thread. A Fiber runs a function on a stack of its
// own and hands the thread back whenever that function calls fiber_yield()
// (the transport's wait does between polls), so one thread interleaves many
// blocking algorithms: each keeps its place in its own frames, as a
// resumable task, without a thread of its own. A fiber is resumed only by
// the thread that first resumed it. Its detailed error message (status.hpp)
// is its own: switching restores the resumer's.
#pragma once

#include <ucontext.h>

#include <cstddef>
#include <functional>

#include "status.hpp"

namespace bagua {

// A fiber's stack: mapped on demand (pages are committed when first
// touched), with an unmapped guard page below it so an overflow faults.
class FiberStack {
 public:
  static constexpr size_t kBytes = size_t(1) << 20;
  // A stack of kBytes; throws std::bad_alloc when the mapping fails.
  static FiberStack map();
  // No stack (bottom() is null).
  FiberStack() = default;
  ~FiberStack();
  FiberStack(FiberStack &&other) noexcept;
  FiberStack &operator=(FiberStack &&other) noexcept;
  FiberStack(const FiberStack &) = delete;
  FiberStack &operator=(const FiberStack &) = delete;

  bool empty() const { return usable_ == nullptr; }
  void *bottom() const { return usable_; }
  size_t size() const { return kBytes; }

 private:
  void *mapping_ = nullptr;  // guard page, then the usable bytes
  void *usable_ = nullptr;
};

class Fiber {
 public:
  // `body` must not throw: an exception leaving it terminates the process.
  Fiber(std::function<void()> body, FiberStack stack);
  // A fiber is destroyed before it started or after it finished.
  ~Fiber() = default;
  Fiber(const Fiber &) = delete;
  Fiber &operator=(const Fiber &) = delete;

  // Runs the body until it yields or returns; true once it has returned.
  bool resume();
  // The stack of a finished fiber, for the next one.
  FiberStack release_stack() { return std::move(stack_); }

 private:
  friend void fiber_yield();
  static void entry();
  // Switches from the resumer to this fiber, and back when it yields.
  void switch_in();
  void switch_out();

  std::function<void()> body_;
  FiberStack stack_;
  ucontext_t context_{};
  ucontext_t resumer_{};
  ErrorText message_{};  // the fiber's error message while it is switched out
  bool finished_ = false;
  // The sanitizer's view of the two stacks (unused without AddressSanitizer).
  void *fake_stack_ = nullptr;
  void *resumer_fake_stack_ = nullptr;
  const void *resumer_bottom_ = nullptr;
  size_t resumer_size_ = 0;
};

// True while the calling code runs on a fiber.
bool in_fiber();
// Hands the thread back to the fiber's resumer, which resumes it later;
// does nothing outside a fiber.
void fiber_yield();
// Gives way between two unsuccessful polls: inside a fiber to the other
// tasks of its thread, outside to the other threads on the core.
void poll_pause();

}  // namespace bagua
