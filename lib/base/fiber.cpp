#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <exception>
#include <new>
#include <thread>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define BAGUA_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BAGUA_FIBER_ASAN 1
#endif
#endif
#ifdef BAGUA_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace bagua {
namespace {

thread_local Fiber *t_current = nullptr;

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// AddressSanitizer tracks one stack per thread; these tell it when the
// thread moves to another (a no-op without it). `fake_stack` null when
// starting a switch means the stack left is never returned to.
void start_switch(void **fake_stack, const void *bottom, size_t size) {
#ifdef BAGUA_FIBER_ASAN
  __sanitizer_start_switch_fiber(fake_stack, bottom, size);
#else
  (void)fake_stack, (void)bottom, (void)size;
#endif
}

void finish_switch(void *fake_stack, const void **bottom_left, size_t *size_left) {
#ifdef BAGUA_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, bottom_left, size_left);
#else
  (void)fake_stack, (void)bottom_left, (void)size_left;
#endif
}

}  // namespace

FiberStack FiberStack::map() {
  const size_t guard = page_size();
  void *mapping = mmap(nullptr, guard + kBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  if (mprotect(mapping, guard, PROT_NONE) != 0) {
    munmap(mapping, guard + kBytes);
    throw std::bad_alloc();
  }
  FiberStack stack;
  stack.mapping_ = mapping;
  stack.usable_ = static_cast<char *>(mapping) + guard;
  return stack;
}

FiberStack::~FiberStack() {
  if (mapping_ != nullptr) munmap(mapping_, page_size() + kBytes);
}

FiberStack::FiberStack(FiberStack &&other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      usable_(std::exchange(other.usable_, nullptr)) {}

FiberStack &FiberStack::operator=(FiberStack &&other) noexcept {
  std::swap(mapping_, other.mapping_);
  std::swap(usable_, other.usable_);
  return *this;
}

Fiber::Fiber(std::function<void()> body, FiberStack stack)
    : body_(std::move(body)), stack_(std::move(stack)) {
  getcontext(&context_);
  context_.uc_stack.ss_sp = stack_.bottom();
  context_.uc_stack.ss_size = stack_.size();
  context_.uc_link = nullptr;
  makecontext(&context_, &Fiber::entry, 0);
}

// The first frame on the fiber's stack; it never returns (there is no frame
// below it), it switches back for the last time instead.
void Fiber::entry() {
  Fiber *self = t_current;
  finish_switch(nullptr, &self->resumer_bottom_, &self->resumer_size_);
  try {
    self->body_();
  } catch (...) {
    std::terminate();
  }
  self->body_ = nullptr;
  self->finished_ = true;
  start_switch(nullptr, self->resumer_bottom_, self->resumer_size_);
  setcontext(&self->resumer_);
}

bool Fiber::resume() {
  if (finished_) return true;
  Fiber *const outer = std::exchange(t_current, this);
  switch_in();
  t_current = outer;
  return finished_;
}

void Fiber::switch_in() {
  exchange_last_error(message_);
  start_switch(&resumer_fake_stack_, stack_.bottom(), stack_.size());
  swapcontext(&resumer_, &context_);
  finish_switch(resumer_fake_stack_, nullptr, nullptr);
  exchange_last_error(message_);
}

void Fiber::switch_out() {
  start_switch(&fake_stack_, resumer_bottom_, resumer_size_);
  swapcontext(&context_, &resumer_);
  finish_switch(fake_stack_, &resumer_bottom_, &resumer_size_);
}

bool in_fiber() { return t_current != nullptr; }

void fiber_yield() {
  if (t_current != nullptr) t_current->switch_out();
}

void poll_pause() {
  if (in_fiber())
    fiber_yield();
  else
    std::this_thread::yield();
}

}  // namespace bagua
