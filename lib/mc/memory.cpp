#include "memory.hpp"

#include <atomic>

#include "cuda_device.hpp"

namespace bagua {
namespace {

std::atomic<Device *> testing_device{nullptr};

}  // namespace

Device *active_device() {
  Device *d = testing_device.load(std::memory_order_acquire);
  return d != nullptr ? d : cuda_device();
}

Status require_active_device(Device **out) {
  *out = active_device();
  if (*out == nullptr) return fail(BAGUA_ERR_INTERNAL, "a device buffer without an active device");
  return BAGUA_SUCCESS;
}

Status copy_and_wait(Device &device, void *dst, const void *src, size_t bytes, void *stream) {
  BAGUA_TRY(device.copy(dst, src, bytes, stream));
  return device.synchronize(stream);
}

void set_active_device_for_testing(Device *device) {
  testing_device.store(device, std::memory_order_release);
}

Memory memory_type_of(const void *p) {
  Device *d = p == nullptr ? nullptr : active_device();
  return d != nullptr && d->is_device_pointer(p) ? Memory::cuda : Memory::host;
}

}  // namespace bagua
