#include "device_scratch.hpp"

#include <algorithm>

namespace bagua {

DeviceScratch::~DeviceScratch() {
  for (Buffer &b : device_buffers_)
    if (b.p != nullptr) device_.release(b.p);
  for (Buffer &b : host_buffers_)
    if (b.p != nullptr) device_.release_host(b.p);
  for (void *p : retired_device_) device_.release(p);
  for (void *p : retired_host_) device_.release_host(p);
}

void *DeviceScratch::on_device(ScratchUse use, size_t bytes) {
  return grow(device_buffers_[static_cast<size_t>(use)], bytes, false);
}

void *DeviceScratch::on_host(ScratchUse use, size_t bytes) {
  return grow(host_buffers_[static_cast<size_t>(use)], bytes, true);
}

void *DeviceScratch::grow(Buffer &b, size_t bytes, bool host) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes <= b.bytes) return b.p;
  // At least double, so a sequence of growing calls allocates O(log) times.
  const size_t size = std::max(bytes, 2 * b.bytes);
  void *p = host ? device_.allocate_host(size) : device_.allocate(size);
  if (p == nullptr) return nullptr;
  ++allocations_;
  if (b.p != nullptr) (host ? retired_host_ : retired_device_).push_back(b.p);
  b = {p, size};
  return p;
}

DeviceFloats::~DeviceFloats() {
  if (p_ != nullptr) device_->release(p_);
}

Status DeviceFloats::make(Device &device, const float *init, size_t count) {
  const size_t bytes = count * sizeof(float);
  auto *p = static_cast<float *>(device.allocate(bytes));
  if (p == nullptr)
    return fail(BAGUA_ERR_OUT_OF_MEMORY, "could not allocate %zu bytes of device memory", bytes);
  device_ = &device;
  p_ = p;
  return copy_and_wait(device, p, init, bytes, nullptr);
}

}  // namespace bagua
