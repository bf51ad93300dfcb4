#include "emulated_device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "algo/compressed.hpp"
#include "codec.h"

namespace bagua_test {
namespace {

using bagua::codec::CodecStatus;
namespace codec = bagua::codec;

constexpr size_t kAlignment = 256;  // as cudaMalloc

size_t rounded(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The host kernels stand in for the device's (the same bytes by contract).
const codec::HostCodecKernels *kernels_of(bagua::Wire w) {
  return bagua::is_codec(w) ? bagua::wire_info(w).host : nullptr;
}

// A decoder's verdict: argument errors become the stream's error (the CUDA
// twins report them at once), header errors go to the status word.
CodecStatus verdict(CodecStatus st, uint32_t *status) {
  if (st == CodecStatus::bad_argument) return st;
  *status = static_cast<uint32_t>(st);
  return CodecStatus::ok;
}

}  // namespace

// One stream: operations queued in order, run only when someone needs
// their results (synchronize, an event wait, a copy into pageable memory),
// by that thread. Nothing completes by itself, the most adverse schedule a
// GPU may take, so a missing synchronisation always shows.
class EmulatedDevice::Queue {
 public:
  Queue() = default;
  ~Queue() { drain(); }
  Queue(const Queue &) = delete;
  Queue &operator=(const Queue &) = delete;

  void push(std::function<void()> op) {
    const std::lock_guard lock(mutex_);
    ops_.push_back(std::move(op));
  }
  // Runs everything queued so far, in order; returns the sticky error (""
  // when none) and clears it.
  std::string drain() {
    const std::lock_guard running(run_mutex_);  // one runner at a time keeps the order
    for (;;) {
      std::function<void()> op;
      {
        const std::lock_guard lock(mutex_);
        if (ops_.empty()) return std::exchange(error_, "");
        op = std::move(ops_.front());
        ops_.pop_front();
      }
      op();
    }
  }
  void fail(const std::string &what) {
    const std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = what;
  }

 private:
  std::mutex run_mutex_, mutex_;
  std::deque<std::function<void()>> ops_;
  std::string error_;
};

// Completes when its queue runs the operation record_event queued.
struct EmulatedDevice::Event {
  std::mutex mutex;
  Queue *queue = nullptr;                // of the last record
  uint64_t recorded = 0, completed = 0;  // generations
};

EmulatedDevice::EmulatedDevice(size_t arena_bytes)
    : arena_bytes_(arena_bytes), default_queue_(std::make_unique<Queue>()) {
  const int fd = memfd_create("bagua-emulated-device", 0);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(arena_bytes)) != 0)
    throw std::runtime_error("EmulatedDevice: memfd_create failed");
  void *device = mmap(nullptr, arena_bytes, PROT_NONE, MAP_SHARED, fd, 0);
  void *alias = mmap(nullptr, arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (device == MAP_FAILED || alias == MAP_FAILED)
    throw std::runtime_error("EmulatedDevice: mmap failed");
  device_base_ = static_cast<char *>(device);
  alias_base_ = static_cast<char *>(alias);
}

EmulatedDevice::~EmulatedDevice() {
  default_queue_.reset();
  munmap(device_base_, arena_bytes_);
  munmap(alias_base_, arena_bytes_);
}

bool EmulatedDevice::is_device_pointer(const void *p) const {
  const auto *c = static_cast<const char *>(p);
  return c >= device_base_ && c < device_base_ + arena_bytes_;
}

bool EmulatedDevice::is_pageable(const void *p) const {
  if (is_device_pointer(p)) return false;
  const auto *c = static_cast<const char *>(p);
  const std::lock_guard lock(mutex_);
  auto it = page_locked_.upper_bound(c);
  if (it == page_locked_.begin()) return true;
  --it;
  return c >= it->first + it->second;
}

template <class T>
T *EmulatedDevice::host_view(T *p) const {
  if (!is_device_pointer(p)) return p;
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  const auto offset = static_cast<size_t>(reinterpret_cast<Byte *>(p) - device_base_);
  return reinterpret_cast<T *>(alias_base_ + offset);
}

EmulatedDevice::Queue &EmulatedDevice::queue(void *stream) {
  return stream == nullptr ? *default_queue_ : *static_cast<Queue *>(stream);
}

void *EmulatedDevice::allocate(size_t bytes) {
  const std::lock_guard lock(mutex_);
  const size_t size = rounded(bytes);
  char *p = nullptr;
  if (auto it = free_blocks_.find(size); it != free_blocks_.end()) {
    p = it->second;
    free_blocks_.erase(it);
  } else {
    if (size > arena_bytes_ - next_) return nullptr;
    p = device_base_ + next_;
    next_ += size;
  }
  sizes_[p] = size;
  return p;
}

void EmulatedDevice::release(void *p) {
  const std::lock_guard lock(mutex_);
  const auto it = sizes_.find(static_cast<char *>(p));
  if (it == sizes_.end()) return;
  free_blocks_.emplace(it->second, it->first);
  sizes_.erase(it);
}

void *EmulatedDevice::allocate_host(size_t bytes) {
  void *p = std::aligned_alloc(kAlignment, rounded(bytes));
  if (p == nullptr) return nullptr;
  const std::lock_guard lock(mutex_);
  page_locked_[static_cast<const char *>(p)] = rounded(bytes);
  return p;
}

void EmulatedDevice::release_host(void *p) {
  {
    const std::lock_guard lock(mutex_);
    page_locked_.erase(static_cast<const char *>(p));
  }
  std::free(p);
}

bagua::Status EmulatedDevice::copy(void *dst, const void *src, size_t bytes, void *stream) {
  if (bytes == 0) return BAGUA_SUCCESS;
  char *d = static_cast<char *>(host_view(dst));
  const char *s = static_cast<const char *>(host_view(src));
  Queue &q = queue(stream);
  // Into pageable memory: complete on return.
  if (is_pageable(dst)) {
    q.push([=] { std::memcpy(d, s, bytes); });
    return synchronize(stream);
  }
  // From pageable memory: the source is taken now, written later.
  if (is_pageable(src)) {
    auto taken = std::make_shared<std::vector<char>>(s, s + bytes);
    q.push([=] { std::memcpy(d, taken->data(), bytes); });
    return BAGUA_SUCCESS;
  }
  q.push([=] { std::memcpy(d, s, bytes); });
  return BAGUA_SUCCESS;
}

bagua::Status EmulatedDevice::synchronize(void *stream) {
  const std::string error = queue(stream).drain();
  if (error.empty()) return BAGUA_SUCCESS;
  return bagua::fail(BAGUA_ERR_INTERNAL, "emulated device: %s", error.c_str());
}

bagua::Status EmulatedDevice::create_stream(void **stream) {
  *stream = new Queue;
  return BAGUA_SUCCESS;
}

void EmulatedDevice::destroy_stream(void *stream) { delete static_cast<Queue *>(stream); }

bagua::Status EmulatedDevice::create_event(void **event) {
  *event = new Event;
  return BAGUA_SUCCESS;
}

void EmulatedDevice::destroy_event(void *event) { delete static_cast<Event *>(event); }

bagua::Status EmulatedDevice::record_event(void *event, void *stream) {
  auto *e = static_cast<Event *>(event);
  Queue &q = queue(stream);
  uint64_t generation;
  {
    const std::lock_guard lock(e->mutex);
    generation = ++e->recorded;
    e->queue = &q;
  }
  q.push([e, generation] {
    const std::lock_guard lock(e->mutex);
    e->completed = std::max(e->completed, generation);
  });
  return BAGUA_SUCCESS;
}

bagua::Status EmulatedDevice::wait_event(void *event) {
  auto *e = static_cast<Event *>(event);
  Queue *q = nullptr;
  {
    const std::lock_guard lock(e->mutex);
    if (e->recorded == 0)
      return bagua::fail(BAGUA_ERR_INTERNAL, "emulated device: waited for an event never recorded");
    q = e->queue;
  }
  const std::string error = q->drain();
  if (!error.empty()) return bagua::fail(BAGUA_ERR_INTERNAL, "emulated device: %s", error.c_str());
  const std::lock_guard lock(e->mutex);
  if (e->completed >= e->recorded) return BAGUA_SUCCESS;
  return bagua::fail(BAGUA_ERR_INTERNAL, "emulated device: an event did not complete");
}

void EmulatedDevice::launch(void *stream, std::function<CodecStatus()> kernel) {
  Queue &q = queue(stream);
  q.push([&q, kernel = std::move(kernel)] {
    const CodecStatus st = kernel();
    if (st != CodecStatus::ok)
      q.fail(std::string("a kernel failed: ") + codec::codec_status_name(st));
  });
}

CodecStatus EmulatedDevice::encode(const bagua::DeviceCodecSpec &spec, const void *src,
                                   bagua::DType t, size_t count, void *out, void *stream) {
  const codec::HostCodecKernels *k = kernels_of(spec.wire);
  if (k == nullptr) return CodecStatus::bad_argument;
  const void *in = host_view(src);
  void *o = host_view(out);
  codec::CodecParams params = spec.params;
  params.residual = host_view(params.residual);
  launch(stream, [=]() { return k->encode(params, in, t, count, o); });
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::decode(const bagua::DeviceCodecSpec &spec, const void *in, size_t bytes,
                                   size_t count, void *dst, bagua::DType t, uint32_t *status,
                                   void *stream) {
  const codec::HostCodecKernels *k = kernels_of(spec.wire);
  if (k == nullptr) return CodecStatus::bad_argument;
  const void *i = host_view(in);
  void *d = host_view(dst);
  uint32_t *s = host_view(status);
  const codec::CodecParams params = spec.params;
  launch(stream, [=]() { return verdict(k->decode(params, i, bytes, count, d, t), s); });
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::decode_accumulate(const bagua::DeviceCodecSpec &spec, const void *in,
                                              size_t bytes, size_t count, float *acc,
                                              uint32_t *status, void *stream) {
  const codec::HostCodecKernels *k = kernels_of(spec.wire);
  if (k == nullptr) return CodecStatus::bad_argument;
  const void *i = host_view(in);
  float *a = host_view(acc);
  uint32_t *s = host_view(status);
  const codec::CodecParams params = spec.params;
  launch(stream, [=]() { return verdict(k->decode_accumulate(params, i, bytes, count, a), s); });
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::load_as_float(const void *src, bagua::DType t, size_t count, float *out,
                                          void *stream) {
  const void *s = host_view(src);
  float *o = host_view(out);
  launch(stream, [=] {
    bagua::load_as_float(s, t, count, o);
    return CodecStatus::ok;
  });
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::divide(float *acc, size_t count, float divisor, void *stream) {
  float *a = host_view(acc);
  launch(stream, [=] {
    for (size_t i = 0; i < count; ++i) a[i] /= divisor;
    return CodecStatus::ok;
  });
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::store_from_float(const float *acc, size_t count, void *dst,
                                             bagua::DType t, void *stream) {
  const float *a = host_view(acc);
  void *d = host_view(dst);
  launch(stream, [=] {
    bagua::store_from_float(a, count, d, t);
    return CodecStatus::ok;
  });
  return CodecStatus::ok;
}

}  // namespace bagua_test
