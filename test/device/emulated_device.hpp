// A Device for machines without a GPU, so the device paths run in every CI
// pass, with the semantics a CUDA device has where the library could get
// them wrong:
// - Its memory is a region the host cannot touch (mapped PROT_NONE): a
//   library that reads or writes a device buffer from the host crashes the
//   test instead of passing it. A second, readable mapping of the same pages
//   serves this device's copies and kernels.
// - Work is asynchronous, and as late as a GPU may make it: each stream is
//   a queue that runs only when a thread needs its results (synchronize(),
//   an event wait, a copy into pageable memory), so a result read without
//   one is always stale. As cudaMemcpyAsync does, a copy
//   from pageable host memory takes its source before it returns, and a copy
//   into pageable host memory completes before it returns; copies between
//   device and page-locked memory (allocate_host) do neither.
// - Errors of queued work are sticky and reported by the next synchronize().
// - Waiting for an event nobody recorded fails (the library waited for work
//   nobody marked ready).
// Kernels are the CPU codecs of kernels/codec.h, which write the same bytes
// as their CUDA twins.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "mc/device.hpp"

namespace bagua_test {

class EmulatedDevice final : public bagua::Device {
 public:
  // Reserves `arena_bytes` of address space (pages are allocated on first
  // touch); a released allocation is reused by one of the same size.
  explicit EmulatedDevice(size_t arena_bytes = size_t(1) << 32);
  ~EmulatedDevice() override;
  EmulatedDevice(const EmulatedDevice &) = delete;
  EmulatedDevice &operator=(const EmulatedDevice &) = delete;

  const char *name() const override { return "emulated"; }
  bool is_device_pointer(const void *p) const override;
  void *allocate(size_t bytes) override;
  void release(void *p) override;
  void *allocate_host(size_t bytes) override;
  void release_host(void *p) override;
  bagua::Status copy(void *dst, const void *src, size_t bytes, void *stream) override;
  bagua::Status synchronize(void *stream) override;
  bagua::Status create_stream(void **stream) override;
  void destroy_stream(void *stream) override;
  bagua::Status create_event(void **event) override;
  void destroy_event(void *event) override;
  bagua::Status record_event(void *event, void *stream) override;
  bagua::Status wait_event(void *event) override;

  bagua::codec::CodecStatus encode(const bagua::DeviceCodecSpec &spec, const void *src,
                                   bagua::DType t, size_t count, void *out, void *stream) override;
  bagua::codec::CodecStatus decode(const bagua::DeviceCodecSpec &spec, const void *in, size_t bytes,
                                   size_t count, void *dst, bagua::DType t, uint32_t *status,
                                   void *stream) override;
  bagua::codec::CodecStatus decode_accumulate(const bagua::DeviceCodecSpec &spec, const void *in,
                                              size_t bytes, size_t count, float *acc,
                                              uint32_t *status, void *stream) override;
  bagua::codec::CodecStatus load_as_float(const void *src, bagua::DType t, size_t count, float *out,
                                          void *stream) override;
  bagua::codec::CodecStatus divide(float *acc, size_t count, float divisor, void *stream) override;
  bagua::codec::CodecStatus store_from_float(const float *acc, size_t count, void *dst,
                                             bagua::DType t, void *stream) override;

 private:
  class Queue;
  struct Event;

  // The readable address of p: itself for host memory, its alias for device memory.
  template <class T>
  T *host_view(T *p) const;
  bool is_pageable(const void *p) const;
  Queue &queue(void *stream);
  // Queues a kernel whose CodecStatus becomes the stream's sticky error
  // when it is not ok.
  void launch(void *stream, std::function<bagua::codec::CodecStatus()> kernel);

  size_t arena_bytes_;
  char *device_base_ = nullptr;  // PROT_NONE: what callers get
  char *alias_base_ = nullptr;   // the same pages, readable and writable
  mutable std::mutex mutex_;
  size_t next_ = 0;
  std::map<char *, size_t> sizes_;              // live allocations
  std::multimap<size_t, char *> free_blocks_;   // released ones, by size
  std::map<const char *, size_t> page_locked_;  // allocate_host's blocks
  std::unique_ptr<Queue> default_queue_;        // the nullptr stream
};

}  // namespace bagua_test
