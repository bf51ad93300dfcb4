// One accelerator as bagua's device paths see it (the model: UCC's mc/ and
// ec/ components): its memory (which pointers are device memory, device and
// page-locked host allocations, copies) and the kernels of the compressed
// allreduce (the CUDA twins of kernels/codec.h, the same bytes). The device
// codec adapter and the host staging of device buffers are written once
// against this interface; CudaDevice (cuda_device.cpp) implements it with the
// CUDA runtime, and the tests add an emulated device whose memory the host
// cannot touch (test/device/), so those paths run in every CI pass.
//
// Streams are the device's queue handles as void * (cudaStream_t for CUDA;
// nullptr is the default stream). Every operation is enqueued on its stream
// in order; synchronize() waits for all of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../base/dtype.hpp"
#include "../base/status.hpp"
#include "../base/wires.hpp"
#include "codec.h"

namespace bagua {

// The codec a kernel runs: a wire of the registry and its kernel
// parameters (block, prescale, error-feedback residual in device memory,
// indexed like the kernel's input).
struct DeviceCodecSpec {
  Wire wire;
  codec::CodecParams params;
};

// Encoded size of `count` elements, as kernels/codec.h counts it.
size_t device_codec_encoded_bytes(const DeviceCodecSpec &spec, size_t count);

class Device {
 public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;

  // Memory. is_device_pointer: p is memory the host cannot address
  // (cudaMemoryTypeDevice); host, page-locked and managed memory are not.
  // Allocations return nullptr when out of memory; host allocations are
  // page-locked so copies from and to them are asynchronous.
  virtual bool is_device_pointer(const void *p) const = 0;
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *p) = 0;
  virtual void *allocate_host(size_t bytes) = 0;
  virtual void release_host(void *p) = 0;
  // Copies bytes between any two of device, page-locked and pageable memory.
  virtual Status copy(void *dst, const void *src, size_t bytes, void *stream) = 0;
  virtual Status synchronize(void *stream) = 0;

  // A stream of the library's own (bucket copies), and events: an event
  // recorded on a stream completes when the work queued there before it
  // has; wait_event blocks the calling thread until then.
  virtual Status create_stream(void **stream) = 0;
  virtual void destroy_stream(void *stream) = 0;
  virtual Status create_event(void **event) = 0;
  virtual void destroy_event(void *event) = 0;
  virtual Status record_event(void *event, void *stream) = 0;
  virtual Status wait_event(void *event) = 0;

  // Kernels, on device memory. Decoders treat `in` as untrusted, write
  // their verdict (a CodecStatus) to the device word *status, and leave
  // dst / acc untouched when it is not ok; read it after synchronize().
  // The returned status reports argument errors and launch failures.
  virtual codec::CodecStatus encode(const DeviceCodecSpec &spec, const void *src, DType t,
                                    size_t count, void *out, void *stream) = 0;
  virtual codec::CodecStatus decode(const DeviceCodecSpec &spec, const void *in, size_t bytes,
                                    size_t count, void *dst, DType t, uint32_t *status,
                                    void *stream) = 0;
  // acc[i] += decode(in)[i], in float32.
  virtual codec::CodecStatus decode_accumulate(const DeviceCodecSpec &spec, const void *in,
                                               size_t bytes, size_t count, float *acc,
                                               uint32_t *status, void *stream) = 0;
  // The float32 reduce step: out = src as float32; acc /= divisor; dst = acc as t.
  virtual codec::CodecStatus load_as_float(const void *src, DType t, size_t count, float *out,
                                           void *stream) = 0;
  virtual codec::CodecStatus divide(float *acc, size_t count, float divisor, void *stream) = 0;
  virtual codec::CodecStatus store_from_float(const float *acc, size_t count, void *dst, DType t,
                                              void *stream) = 0;
};

// The device whose buffers bagua recognises: CUDA's when the build has CUDA
// and the runtime reports a device, else none (nullptr). Thread-safe.
Device *active_device();

// The active device for a call with device buffers: fails (internal
// error) when there is none, which memory_type_of rules out.
Status require_active_device(Device **out);

// Copies bytes on `stream` and waits until the copy is done.
Status copy_and_wait(Device &device, void *dst, const void *src, size_t bytes, void *stream);

// Tests only: makes `device` the active device (nullptr: back to the
// default). Call before the first bagua call and keep it alive until after
// the last.
void set_active_device_for_testing(Device *device);

}  // namespace bagua
