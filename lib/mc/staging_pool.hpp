// Page-locked buffers with a stream and an event each, for device-buffer
// calls that run on worker threads after the caller returned (the
// nonblocking calls): a call takes a slot, stages through it, and gives it
// back, so calls in flight never share one and a steady stream of calls
// allocates nothing. A buffer a call outgrew is released with the pool, not
// inside a call (cudaFreeHost synchronises the device).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "device.hpp"

namespace bagua {

class StagingPool {
 public:
  struct Slot {
    void *host = nullptr;  // page-locked, `bytes` long
    size_t bytes = 0;
    void *stream = nullptr;
    void *event = nullptr;
  };

  explicit StagingPool(Device &device) : device_(device) {}
  // Every slot must have been given back.
  ~StagingPool();
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;

  Device &device() const { return device_; }
  // A slot with at least `bytes` of page-locked memory. Thread-safe.
  Status take(size_t bytes, Slot **out);
  void give_back(Slot *slot);

 private:
  Status make_slot(std::unique_ptr<Slot> *out);

  Device &device_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot *> free_;
  std::vector<void *> retired_;  // outgrown buffers
};

}  // namespace bagua
