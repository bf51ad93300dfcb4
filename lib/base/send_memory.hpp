// Memory that sends may still read after their call gave up.
//
// After a timeout or a failure, a call abandons its requests; receives are
// cancelled, but sends cannot be (neither MPI nor UCX can cancel a send), so
// a late peer may still read their bytes long after the call returned. The
// transports record every abandoned send's range here, and bagua's buffers
// (scratch, staging, state objects) use `SendMemory`, whose deallocation keeps
// a block that holds such a range until the process exits instead of
// returning it to the system. Costs one relaxed atomic load per free while no
// send was ever abandoned.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace bagua {

// Records that a send of `bytes` from `p` was abandoned while in flight.
void abandoned_send_add(const void *p, size_t bytes);

// True if an abandoned send reads inside [p, p + bytes).
bool abandoned_send_within(const void *p, size_t bytes);

// Keeps the block [p, p + bytes) allocated (and reachable) until exit.
void keep_until_exit(void *p, size_t bytes);

template <class T>
struct SendMemory {
  using value_type = T;
  SendMemory() = default;
  template <class U>
  SendMemory(const SendMemory<U> &) {}
  T *allocate(size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T *p, size_t n) {
    if (abandoned_send_within(p, n * sizeof(T)))
      keep_until_exit(p, n * sizeof(T));
    else
      std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const SendMemory<U> &) const {
    return true;
  }
};

// A vector whose storage survives the sends abandoned in it.
template <class T>
using SendVector = std::vector<T, SendMemory<T>>;
using Bytes = SendVector<unsigned char>;

}  // namespace bagua
