// Element-wise kernels of the compressed allreduce's reduce step on device
// memory, in runs of 16-byte words (Dev in kernels/cuda/common.cuh). Conversions are half.h's,
// shared with the host path, so a device buffer gives the same bits as a host buffer.
#include "cuda/common.cuh"
#include "cuda_codecs.cuh"

namespace bagua {
namespace {

using codec::CodecStatus;
using codec::gpu::DevF32;
using codec::gpu::grid_for;
using codec::gpu::kThreads;
using codec::gpu::launch_status;
using codec::gpu::run_len;
using codec::gpu::with_dtype;

// Each thread step moves a run of kRun elements (16-byte words where aligned).
constexpr uint32_t kRun = 8;

inline unsigned grid_for_runs(size_t count) {
  return grid_for((count + kRun - 1) / kRun, kThreads);
}

template <class E>
__global__ void load_kernel(const typename E::T *src, size_t count, float *out) {
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * kRun; i < count;
       i += size_t(gridDim.x) * blockDim.x * kRun) {
    float v[kRun] = {};
    const uint32_t valid = run_len(count, i, kRun);
    E::load_run(src, i, valid, v);
    DevF32::store_run(out, i, valid, v);
  }
}

template <class E>
__global__ void store_kernel(const float *acc, size_t count, typename E::T *dst) {
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * kRun; i < count;
       i += size_t(gridDim.x) * blockDim.x * kRun) {
    float v[kRun] = {};
    const uint32_t valid = run_len(count, i, kRun);
    DevF32::load_run(acc, i, valid, v);
    E::store_run(dst, i, valid, v);
  }
}

__global__ void divide_kernel(float *acc, size_t count, float divisor) {
  for (size_t i = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) * kRun; i < count;
       i += size_t(gridDim.x) * blockDim.x * kRun) {
    float v[kRun] = {};
    const uint32_t valid = run_len(count, i, kRun);
    DevF32::load_run(acc, i, valid, v);
#pragma unroll
    for (uint32_t k = 0; k < kRun; ++k) v[k] = __fdiv_rn(v[k], divisor);
    DevF32::store_run(acc, i, valid, v);
  }
}

cudaStream_t as_stream(void *s) { return static_cast<cudaStream_t>(s); }

}  // namespace

CodecStatus gpu_load_as_float(const void *src, DType t, size_t count, float *out, void *stream) {
  if (count == 0) return CodecStatus::ok;
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    load_kernel<E><<<grid_for_runs(count), kThreads, 0, as_stream(stream)>>>(
        static_cast<const typename E::T *>(src), count, out);
    return launch_status();
  });
}

CodecStatus gpu_divide(float *acc, size_t count, float divisor, void *stream) {
  if (count == 0) return CodecStatus::ok;
  divide_kernel<<<grid_for_runs(count), kThreads, 0, as_stream(stream)>>>(acc, count, divisor);
  return launch_status();
}

CodecStatus gpu_store_from_float(const float *acc, size_t count, void *dst, DType t, void *stream) {
  if (count == 0) return CodecStatus::ok;
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    store_kernel<E><<<grid_for_runs(count), kThreads, 0, as_stream(stream)>>>(
        acc, count, static_cast<typename E::T *>(dst));
    return launch_status();
  });
}

}  // namespace bagua
