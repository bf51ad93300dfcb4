// GPU adapters of the compressed allreduce (see cuda_codecs.hpp).
#include "cuda_codecs.hpp"

#include <cuda_runtime_api.h>

#include <cstring>

#include "codec_cuda.h"
#include "cuda_codecs.cuh"

namespace bagua {
namespace {

using codec::CodecStatus;

// A device or pinned host buffer that only grows.
class CudaBuffer {
 public:
  explicit CudaBuffer(bool pinned_host) : pinned_host_(pinned_host) {}
  ~CudaBuffer() { release(); }
  CudaBuffer(const CudaBuffer &) = delete;
  CudaBuffer &operator=(const CudaBuffer &) = delete;

  // At least `bytes` bytes, or nullptr when allocation failed.
  void *get(size_t bytes) {
    if (bytes <= size_ && p_ != nullptr) return p_;
    release();
    const cudaError_t e = pinned_host_ ? cudaMallocHost(&p_, bytes) : cudaMalloc(&p_, bytes);
    if (e != cudaSuccess) {
      p_ = nullptr;
      size_ = 0;
      return nullptr;
    }
    size_ = bytes;
    return p_;
  }

 private:
  void release() {
    if (p_ == nullptr) return;
    if (pinned_host_)
      cudaFreeHost(p_);
    else
      cudaFree(p_);
    p_ = nullptr;
  }
  bool pinned_host_;
  void *p_ = nullptr;
  size_t size_ = 0;
};

// Everything common to the GPU adapters: staging buffers, the stream, the
// copies of encoded bytes between host slots and the device, the reduce step.
// Subclasses name the kernels.
class GpuCodec : public ChunkCodec {
 public:
  explicit GpuCodec(void *stream)
      : stream_(static_cast<cudaStream_t>(stream)),
        device_encoded_(false),
        host_encoded_(true),
        device_acc_(false),
        device_status_(false),
        host_status_(true) {}

  CodecStatus encode(Stage stage, size_t, const void *src, DType t, size_t count,
                     void *out) override {
    const size_t n = encoded_bytes(count);
    void *dev = device_encoded_.get(n);
    void *host = host_encoded_.get(n);
    if (dev == nullptr || host == nullptr) return CodecStatus::device_error;
    const CodecStatus st = encode_on_device(stage, src, t, count, dev);
    if (st != CodecStatus::ok) return st;
    // Only the encoded bytes cross to the host; the transport needs them now.
    if (cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, stream_) != cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      return CodecStatus::device_error;
    std::memcpy(out, host, n);
    return CodecStatus::ok;
  }

  CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst,
                     DType t) const override {
    return decode_staged(in, bytes, [&](const void *dev, uint32_t *status) {
      return decode_on_device(dev, bytes, count, dst, t, status);
    });
  }

  CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count,
                                float *acc) const override {
    return decode_staged(in, bytes, [&](const void *dev, uint32_t *status) {
      return accumulate_on_device(dev, bytes, count, acc, status);
    });
  }

  float *accumulator(size_t count) override {
    return static_cast<float *>(device_acc_.get(count * sizeof(float)));
  }
  CodecStatus load_accumulator(const void *src, DType t, size_t count, float *acc) override {
    return gpu_load_as_float(src, t, count, acc, stream_);
  }
  CodecStatus divide_accumulator(float *acc, size_t count, float divisor) override {
    return gpu_divide(acc, count, divisor, stream_);
  }
  CodecStatus store_accumulator(const float *acc, size_t count, void *dst, DType t) override {
    const CodecStatus st = gpu_store_from_float(acc, count, dst, t, stream_);
    if (st != CodecStatus::ok) return st;
    return cudaStreamSynchronize(stream_) == cudaSuccess ? CodecStatus::ok
                                                         : CodecStatus::device_error;
  }

 protected:
  virtual CodecStatus encode_on_device(Stage stage, const void *src, DType t, size_t count,
                                       void *out) = 0;
  virtual CodecStatus decode_on_device(const void *in, size_t bytes, size_t count, void *dst,
                                       DType t, uint32_t *status) const = 0;
  virtual CodecStatus accumulate_on_device(const void *in, size_t bytes, size_t count, float *acc,
                                           uint32_t *status) const = 0;
  cudaStream_t stream_;

 private:
  // Copies the encoded bytes to the device, runs `kernel` on them and waits
  // for its verdict on the (untrusted) headers.
  template <class Kernel>
  CodecStatus decode_staged(const void *in, size_t bytes, Kernel &&kernel) const {
    void *dev = device_encoded_.get(bytes > 0 ? bytes : 1);
    auto *status = static_cast<uint32_t *>(device_status_.get(sizeof(uint32_t)));
    auto *verdict = static_cast<uint32_t *>(host_status_.get(sizeof(uint32_t)));
    if (dev == nullptr || status == nullptr || verdict == nullptr) return CodecStatus::device_error;
    // From pageable memory the copy returns once `in` is staged, so the
    // schedule may reuse its slot at once.
    if (cudaMemcpyAsync(dev, in, bytes, cudaMemcpyHostToDevice, stream_) != cudaSuccess)
      return CodecStatus::device_error;
    const CodecStatus st = kernel(dev, status);
    if (st != CodecStatus::ok) return st;
    if (cudaMemcpyAsync(verdict, status, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream_) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess)
      return CodecStatus::device_error;
    return static_cast<CodecStatus>(*verdict);
  }

  mutable CudaBuffer device_encoded_, host_encoded_, device_acc_, device_status_, host_status_;
};

// The device entry points of one min-max codec of kernels/codec_cuda.h (q8 or q4).
struct GpuMinMaxEntryPoints {
  size_t (*encoded_bytes)(size_t count, uint32_t block);
  CodecStatus (*encode)(const void *src, DType t, size_t count, uint32_t block, void *out,
                        cudaStream_t stream);
  CodecStatus (*decode)(const void *in, size_t bytes, size_t count, uint32_t block, void *dst,
                        DType t, uint32_t *status, cudaStream_t stream);
  CodecStatus (*decode_accumulate)(const void *in, size_t bytes, size_t count, uint32_t block,
                                   float *acc, uint32_t *status, cudaStream_t stream);
};

constexpr GpuMinMaxEntryPoints kGpuQ8{codec::q8_encoded_bytes, codec::gpu::q8_encode,
                                      codec::gpu::q8_decode, codec::gpu::q8_decode_accumulate};
constexpr GpuMinMaxEntryPoints kGpuQ4{codec::q4_encoded_bytes, codec::gpu::q4_encode,
                                      codec::gpu::q4_decode, codec::gpu::q4_decode_accumulate};

class GpuMinMaxCodec final : public GpuCodec {
 public:
  GpuMinMaxCodec(const GpuMinMaxEntryPoints &fns, uint32_t block, void *stream)
      : GpuCodec(stream), fns_(fns), block_(block) {}
  size_t encoded_bytes(size_t count) const override { return fns_.encoded_bytes(count, block_); }
  size_t block_elems() const override { return block_; }

 protected:
  CodecStatus encode_on_device(Stage, const void *src, DType t, size_t count, void *out) override {
    return fns_.encode(src, t, count, block_, out, stream_);
  }
  CodecStatus decode_on_device(const void *in, size_t bytes, size_t count, void *dst, DType t,
                               uint32_t *status) const override {
    return fns_.decode(in, bytes, count, block_, dst, t, status, stream_);
  }
  CodecStatus accumulate_on_device(const void *in, size_t bytes, size_t count, float *acc,
                                   uint32_t *status) const override {
    return fns_.decode_accumulate(in, bytes, count, block_, acc, status, stream_);
  }

 private:
  GpuMinMaxEntryPoints fns_;
  uint32_t block_;
};

class GpuCastCodec final : public GpuCodec {
 public:
  GpuCastCodec(codec::CastFormat format, float contribution_prescale, float reduced_prescale,
               void *stream)
      : GpuCodec(stream), format_(format), prescale_{contribution_prescale, reduced_prescale} {}
  size_t encoded_bytes(size_t count) const override { return codec::cast_encoded_bytes(count); }
  size_t block_elems() const override { return 1; }

 protected:
  CodecStatus encode_on_device(Stage stage, const void *src, DType t, size_t count,
                               void *out) override {
    return codec::gpu::cast_encode(src, t, count, format_, prescale_[static_cast<int>(stage)], out,
                                   stream_);
  }
  CodecStatus decode_on_device(const void *in, size_t bytes, size_t count, void *dst, DType t,
                               uint32_t *status) const override {
    return codec::gpu::cast_decode(in, bytes, count, dst, t, status, stream_);
  }
  CodecStatus accumulate_on_device(const void *in, size_t bytes, size_t count, float *acc,
                                   uint32_t *status) const override {
    return codec::gpu::cast_decode_accumulate(in, bytes, count, acc, status, stream_);
  }

 private:
  codec::CastFormat format_;
  float prescale_[2];
};

}  // namespace

std::unique_ptr<ChunkCodec> make_device_codec(Wire wire, uint32_t block,
                                              float contribution_prescale, float reduced_prescale,
                                              void *stream) {
  switch (wire) {
    case Wire::q8: return std::make_unique<GpuMinMaxCodec>(kGpuQ8, block, stream);
    case Wire::q4: return std::make_unique<GpuMinMaxCodec>(kGpuQ4, block, stream);
    case Wire::fp16:
    case Wire::bf16: {
      const auto format = wire == Wire::fp16 ? codec::CastFormat::fp16 : codec::CastFormat::bf16;
      return std::make_unique<GpuCastCodec>(format, contribution_prescale, reduced_prescale,
                                            stream);
    }
    case Wire::exact:
    case Wire::sign: break;
  }
  return nullptr;
}

}  // namespace bagua
