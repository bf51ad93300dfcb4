// The one staging of device buffers through the host, for every schedule
// that runs on host memory: blocking, nonblocking, bucketed and
// asynchronous calls alike. A communicator owns one pool
// (Communicator::staging) of page-locked buffers with a stream and an event
// each; a call takes a slot as a StagedCopy, copies through it, and gives it
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

// A slot of a pool, held until release() or the copy's end: page-locked host
// memory and the stream its copies run on.
class StagedCopy {
 public:
  StagedCopy() = default;
  ~StagedCopy() { release(); }
  StagedCopy(const StagedCopy &) = delete;
  StagedCopy &operator=(const StagedCopy &) = delete;

  // At least `bytes` of page-locked memory from `pool`.
  static Status take(StagingPool &pool, size_t bytes, StagedCopy *out);
  // Gives the slot back (before the pool goes); a no-op when none is held.
  void release();

  bool held() const { return slot_ != nullptr; }
  void *host() const { return slot_->host; }
  Device &device() const { return pool_->device(); }
  // Marks the point of `stream` (the caller's; nullptr: the default stream)
  // after which the device data may be read: the next copy_in waits for it,
  // however late it runs.
  Status mark_ready(void *stream);
  // Queue a copy on the slot's stream: device `src` into host() + offset,
  // or host() + offset into device `dst`. finish() waits for them.
  Status copy_in(size_t offset, const void *src, size_t bytes);
  Status copy_out(void *dst, size_t offset, size_t bytes);
  Status finish();
  // copy_in of `bytes` of device `src` at the start, complete on return.
  Status fill(const void *src, size_t bytes);

 private:
  StagingPool *pool_ = nullptr;
  StagingPool::Slot *slot_ = nullptr;
  bool ready_pending_ = false;  // mark_ready's event not yet waited for
};

// `bytes` of device `src` in a staged copy taken from `pool`, read after
// the work queued on `stream` (complete on return).
Status stage_in(StagingPool &pool, const void *src, size_t bytes, void *stream, StagedCopy *out);
// The staged copy's first `bytes` into device `dst` (complete on return).
Status stage_out(StagedCopy &staged, void *dst, size_t bytes);

}  // namespace bagua
