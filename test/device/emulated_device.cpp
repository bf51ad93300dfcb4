#include "emulated_device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "algo/compressed.hpp"
#include "codec.h"

namespace bagua_test {
namespace {

using bagua::codec::CodecStatus;
namespace codec = bagua::codec;

constexpr size_t kAlignment = 256;  // as cudaMalloc

codec::CastFormat cast_format(bagua::Wire w) {
  return w == bagua::Wire::bf16 ? codec::CastFormat::bf16 : codec::CastFormat::fp16;
}

// A decoder's verdict: argument errors are reported at once (as the CUDA
// twins do), header errors through the status word.
CodecStatus verdict(CodecStatus st, uint32_t *status) {
  if (st == CodecStatus::bad_argument) return st;
  *status = static_cast<uint32_t>(st);
  return CodecStatus::ok;
}

}  // namespace

EmulatedDevice::EmulatedDevice(size_t arena_bytes) : arena_bytes_(arena_bytes) {
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
  munmap(device_base_, arena_bytes_);
  munmap(alias_base_, arena_bytes_);
}

bool EmulatedDevice::is_device_pointer(const void *p) const {
  const auto *c = static_cast<const char *>(p);
  return c >= device_base_ && c < device_base_ + arena_bytes_;
}

template <class T>
T *EmulatedDevice::host_view(T *p) const {
  if (!is_device_pointer(p)) return p;
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  const auto offset = static_cast<size_t>(reinterpret_cast<Byte *>(p) - device_base_);
  return reinterpret_cast<T *>(alias_base_ + offset);
}

void *EmulatedDevice::allocate(size_t bytes) {
  const std::lock_guard lock(mutex_);
  const size_t size = (bytes + kAlignment - 1) / kAlignment * kAlignment;
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
  return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
}

void EmulatedDevice::release_host(void *p) { std::free(p); }

bagua::Status EmulatedDevice::copy(void *dst, const void *src, size_t bytes, void *) {
  if (bytes > 0) std::memcpy(host_view(dst), host_view(src), bytes);
  return BAGUA_SUCCESS;
}

bagua::Status EmulatedDevice::synchronize(void *) { return BAGUA_SUCCESS; }

bagua::Status EmulatedDevice::create_stream(void **stream) {
  *stream = new char;
  return BAGUA_SUCCESS;
}
void EmulatedDevice::destroy_stream(void *stream) { delete static_cast<char *>(stream); }
bagua::Status EmulatedDevice::create_event(void **event) {
  *event = new std::atomic<bool>(false);
  return BAGUA_SUCCESS;
}
void EmulatedDevice::destroy_event(void *event) { delete static_cast<std::atomic<bool> *>(event); }
bagua::Status EmulatedDevice::record_event(void *event, void *) {
  static_cast<std::atomic<bool> *>(event)->store(true);
  return BAGUA_SUCCESS;
}
bagua::Status EmulatedDevice::wait_event(void *event) {
  if (static_cast<std::atomic<bool> *>(event)->load()) return BAGUA_SUCCESS;
  return bagua::fail(BAGUA_ERR_INTERNAL, "emulated device: waited for an event never recorded");
}

CodecStatus EmulatedDevice::encode(const bagua::DeviceCodecSpec &spec, const void *src,
                                   bagua::DType t, size_t count, void *out, void *) {
  const void *in = host_view(src);
  void *o = host_view(out);
  switch (spec.wire) {
    case bagua::Wire::q8: return codec::q8_encode(in, t, count, spec.block, o);
    case bagua::Wire::q4: return codec::q4_encode(in, t, count, spec.block, o);
    case bagua::Wire::fp16:
    case bagua::Wire::bf16:
      return codec::cast_encode(in, t, count, cast_format(spec.wire), spec.prescale, o);
    default: return CodecStatus::bad_argument;
  }
}

CodecStatus EmulatedDevice::decode(const bagua::DeviceCodecSpec &spec, const void *in, size_t bytes,
                                   size_t count, void *dst, bagua::DType t, uint32_t *status,
                                   void *) {
  const void *i = host_view(in);
  void *d = host_view(dst);
  uint32_t *s = host_view(status);
  switch (spec.wire) {
    case bagua::Wire::q8: return verdict(codec::q8_decode(i, bytes, count, spec.block, d, t), s);
    case bagua::Wire::q4: return verdict(codec::q4_decode(i, bytes, count, spec.block, d, t), s);
    case bagua::Wire::fp16:
    case bagua::Wire::bf16: return verdict(codec::cast_decode(i, bytes, count, d, t), s);
    default: return CodecStatus::bad_argument;
  }
}

CodecStatus EmulatedDevice::decode_accumulate(const bagua::DeviceCodecSpec &spec, const void *in,
                                              size_t bytes, size_t count, float *acc,
                                              uint32_t *status, void *) {
  const void *i = host_view(in);
  float *a = host_view(acc);
  uint32_t *s = host_view(status);
  switch (spec.wire) {
    case bagua::Wire::q8:
      return verdict(codec::q8_decode_accumulate(i, bytes, count, spec.block, a), s);
    case bagua::Wire::q4:
      return verdict(codec::q4_decode_accumulate(i, bytes, count, spec.block, a), s);
    case bagua::Wire::fp16:
    case bagua::Wire::bf16: return verdict(codec::cast_decode_accumulate(i, bytes, count, a), s);
    default: return CodecStatus::bad_argument;
  }
}

CodecStatus EmulatedDevice::load_as_float(const void *src, bagua::DType t, size_t count, float *out,
                                          void *) {
  bagua::load_as_float(host_view(src), t, count, host_view(out));
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::divide(float *acc, size_t count, float divisor, void *) {
  float *a = host_view(acc);
  for (size_t i = 0; i < count; ++i) a[i] /= divisor;
  return CodecStatus::ok;
}

CodecStatus EmulatedDevice::store_from_float(const float *acc, size_t count, void *dst,
                                             bagua::DType t, void *) {
  bagua::store_from_float(host_view(acc), count, host_view(dst), t);
  return CodecStatus::ok;
}

}  // namespace bagua_test
