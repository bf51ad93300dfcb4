// Device and page-locked host buffers of one communicator's device calls,
// kept between calls (no allocation on the hot path) and grown when a call
// needs more. The memory a buffer outgrew is released with the scratch, not
// inside a call: cudaFree synchronises the whole device.
#pragma once

#include <array>
#include <cstddef>
#include <vector>

#include "device.hpp"

namespace bagua {

// What each buffer holds: a received encoded segment (decoded on the
// device), the pieces of a call's encodes, its float32 accumulator, a
// half-precision input converted to float32 (sign) and a decoder's verdict
// word. (Staged copies of user buffers live in the communicator's
// StagingPool.)
enum class ScratchUse : uint8_t { encoded, queued, accumulator, converted, verdict };
constexpr size_t kScratchUses = 5;

class DeviceScratch {
 public:
  explicit DeviceScratch(Device &device) : device_(device) {}
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;

  Device &device() const { return device_; }
  // At least `bytes` (>= 1) bytes of device / page-locked host memory for
  // `use`, or nullptr when the device is out of memory.
  void *on_device(ScratchUse use, size_t bytes);
  void *on_host(ScratchUse use, size_t bytes);
  // Allocations made so far (tests: a repeated call allocates nothing).
  size_t allocations() const { return allocations_; }

 private:
  struct Buffer {
    void *p = nullptr;
    size_t bytes = 0;
  };
  void *grow(Buffer &b, size_t bytes, bool host);

  Device &device_;
  std::array<Buffer, kScratchUses> device_buffers_{}, host_buffers_{};
  // Outgrown memory, released with the scratch.
  std::vector<void *> retired_device_, retired_host_;
  size_t allocations_ = 0;
};

// An owned array of floats in device memory (a sign state's residuals).
class DeviceFloats {
 public:
  DeviceFloats() = default;
  ~DeviceFloats();
  DeviceFloats(const DeviceFloats &) = delete;
  DeviceFloats &operator=(const DeviceFloats &) = delete;

  // count floats on `device`, holding init's count floats (host memory).
  Status make(Device &device, const float *init, size_t count);
  float *get() const { return p_; }

 private:
  Device *device_ = nullptr;
  float *p_ = nullptr;
};

}  // namespace bagua
