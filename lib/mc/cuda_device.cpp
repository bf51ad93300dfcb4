// Device on the CUDA runtime: each operation is one runtime call or one
// kernel launch of kernels/cuda (codec_cuda.h) and cuda_codecs.cu.
#include "cuda_device.hpp"

#include <cuda_runtime_api.h>

#include "codec_cuda.h"
#include "cuda_codecs.cuh"

namespace bagua {
namespace {

using codec::CodecStatus;
namespace gpu = codec::gpu;

cudaStream_t as_stream(void *s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void *e) { return static_cast<cudaEvent_t>(e); }

// The runtime's error, cleared so that later calls do not report it again.
Status cuda_failure(cudaError_t e, const char *what) {
  cudaGetLastError();
  return fail(BAGUA_ERR_INTERNAL, "%s failed: %s", what, cudaGetErrorString(e));
}

// What an allocation returned: p, or nullptr (the error cleared) when it failed.
void *allocated(cudaError_t e, void *p) {
  if (e == cudaSuccess) return p;
  cudaGetLastError();
  return nullptr;
}

// The device kernels of a wire of the registry, nullptr for exact.
const gpu::DeviceCodecKernels *kernels_of(Wire w) {
  return is_codec(w) ? gpu::find_device_kernels(wire_name(w)) : nullptr;
}

class CudaDevice final : public Device {
 public:
  const char *name() const override { return "cuda"; }

  bool is_device_pointer(const void *p) const override {
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return attr.type == cudaMemoryTypeDevice;
  }

  void *allocate(size_t bytes) override {
    void *p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    return allocated(e, p);
  }
  void release(void *p) override { cudaFree(p); }
  void *allocate_host(size_t bytes) override {
    void *p = nullptr;
    const cudaError_t e = cudaMallocHost(&p, bytes);
    return allocated(e, p);
  }
  void release_host(void *p) override { cudaFreeHost(p); }

  Status copy(void *dst, const void *src, size_t bytes, void *stream) override {
    if (bytes == 0) return BAGUA_SUCCESS;
    const cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, as_stream(stream));
    return e == cudaSuccess ? BAGUA_SUCCESS : cuda_failure(e, "cudaMemcpyAsync");
  }
  Status synchronize(void *stream) override {
    const cudaError_t e = cudaStreamSynchronize(as_stream(stream));
    return e == cudaSuccess ? BAGUA_SUCCESS : cuda_failure(e, "cudaStreamSynchronize");
  }

  Status create_stream(void **stream) override {
    cudaStream_t s = nullptr;
    const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = s;
    return e == cudaSuccess ? BAGUA_SUCCESS : cuda_failure(e, "cudaStreamCreateWithFlags");
  }
  void destroy_stream(void *stream) override { cudaStreamDestroy(as_stream(stream)); }
  Status create_event(void **event) override {
    cudaEvent_t ev = nullptr;
    const cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    *event = ev;
    return e == cudaSuccess ? BAGUA_SUCCESS : cuda_failure(e, "cudaEventCreateWithFlags");
  }
  void destroy_event(void *event) override { cudaEventDestroy(as_event(event)); }
  Status record_event(void *event, void *stream) override {
    const cudaError_t e = cudaEventRecord(as_event(event), as_stream(stream));
    return e == cudaSuccess ? BAGUA_SUCCESS : cuda_failure(e, "cudaEventRecord");
  }
  Status wait_event(void *event) override {
    const cudaError_t e = cudaEventSynchronize(as_event(event));
    return e == cudaSuccess ? BAGUA_SUCCESS : cuda_failure(e, "cudaEventSynchronize");
  }

  CodecStatus encode(const DeviceCodecSpec &spec, const void *src, DType t, size_t count, void *out,
                     void *stream) override {
    const gpu::DeviceCodecKernels *k = kernels_of(spec.wire);
    if (k == nullptr) return CodecStatus::bad_argument;
    return k->encode(spec.params, src, t, count, out, as_stream(stream));
  }

  CodecStatus decode(const DeviceCodecSpec &spec, const void *in, size_t bytes, size_t count,
                     void *dst, DType t, uint32_t *status, void *stream) override {
    const gpu::DeviceCodecKernels *k = kernels_of(spec.wire);
    if (k == nullptr) return CodecStatus::bad_argument;
    return k->decode(spec.params, in, bytes, count, dst, t, status, as_stream(stream));
  }

  CodecStatus decode_accumulate(const DeviceCodecSpec &spec, const void *in, size_t bytes,
                                size_t count, float *acc, uint32_t *status, void *stream) override {
    const gpu::DeviceCodecKernels *k = kernels_of(spec.wire);
    if (k == nullptr) return CodecStatus::bad_argument;
    return k->decode_accumulate(spec.params, in, bytes, count, acc, status, as_stream(stream));
  }

  CodecStatus load_as_float(const void *src, DType t, size_t count, float *out,
                            void *stream) override {
    return gpu_load_as_float(src, t, count, out, stream);
  }
  CodecStatus divide(float *acc, size_t count, float divisor, void *stream) override {
    return gpu_divide(acc, count, divisor, stream);
  }
  CodecStatus store_from_float(const float *acc, size_t count, void *dst, DType t,
                               void *stream) override {
    return gpu_store_from_float(acc, count, dst, t, stream);
  }
};

}  // namespace

Device *cuda_device() {
  // Asked once: without a device (or a driver) no pointer is device memory.
  static CudaDevice *const device = []() -> CudaDevice * {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
      cudaGetLastError();
      return nullptr;
    }
    static CudaDevice instance;
    return &instance;
  }();
  return device;
}

}  // namespace bagua
