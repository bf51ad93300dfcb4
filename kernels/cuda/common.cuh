// Helpers shared by the CUDA codec kernels: element tags, output sinks,
// launch geometry and host-side argument checks.
#ifndef BAGUA_KERNELS_CUDA_COMMON_CUH
#define BAGUA_KERNELS_CUDA_COMMON_CUH

#include <stdint.h>

#include "codec_cuda.h"
#include "codec_format.h"
#include "dtype.h"

namespace bagua::codec::gpu {

constexpr unsigned kThreads = 256;
constexpr unsigned kMaxGrid = 65535;
constexpr unsigned kFullMask = 0xffffffffu;

// The element types of dtype.h, read and written by index on the device.
template <class E>
struct Dev {
  using T = typename E::T;
  static __device__ float load(const T *p, size_t i) { return E::load(p[i]); }
  static __device__ void store(T *p, size_t i, float v) { p[i] = E::store(v); }
};
using DevF32 = Dev<elem::F32>;
using DevF16 = Dev<elem::F16>;
using DevBF16 = Dev<elem::BF16>;

// Decoded values stored in the caller's dtype.
template <class E>
struct StoreSink {
  typename E::T *dst;
  __device__ void put(size_t i, float v) const { E::store(dst, i, v); }
  __device__ void put_scaled(size_t i, float h, float inv) const { put(i, h * inv); }
  __device__ void nan(size_t i) const { put(i, canonical_nan()); }
};

// Decoded values added into a float32 accumulator; a finite sum beyond the
// float range saturates (codec_format.h).
struct AccumulateSink {
  float *acc;
  __device__ void put(size_t i, float v) const { acc[i] = saturating_add(acc[i], v); }
  __device__ void put_scaled(size_t i, float h, float inv) const { acc[i] = fmaf(h, inv, acc[i]); }
  __device__ void nan(size_t i) const { acc[i] = canonical_nan(); }
};

// Calls fn with the device element tag of t; f64 and unknown types are rejected.
template <class Fn>
CodecStatus with_dtype(DType t, Fn &&fn) {
  switch (t) {
    case DType::f32: return fn(DevF32{});
    case DType::f16: return fn(DevF16{});
    case DType::bf16: return fn(DevBF16{});
    default: return CodecStatus::bad_argument;
  }
}

// A codec's decoder into the caller's dtype: decode(sink) with the sink of t.
template <class Decode>
CodecStatus decode_into(DType t, void *dst, Decode decode) {
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    return decode(StoreSink<E>{static_cast<typename E::T *>(dst)});
  });
}

inline unsigned grid_for(size_t items, unsigned per_block) {
  const size_t blocks = (items + per_block - 1) / per_block;
  return unsigned(blocks < kMaxGrid ? blocks : kMaxGrid);
}

inline bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

inline CodecStatus launch_status() {
  return cudaGetLastError() == cudaSuccess ? CodecStatus::ok : CodecStatus::device_error;
}

// Shared decoder checks: pointers, alignment, exact length; then resets status.
inline CodecStatus check_decode(const void *in, size_t in_bytes, size_t expected, size_t count,
                                const void *dst, uint32_t *status, cudaStream_t stream) {
  if (status == nullptr || (count > 0 && dst == nullptr) || (in_bytes > 0 && in == nullptr) ||
      !aligned16(in)) {
    return CodecStatus::bad_argument;
  }
  if (in_bytes < expected) return CodecStatus::truncated;
  if (in_bytes > expected) return CodecStatus::bad_argument;
  if (cudaMemsetAsync(status, 0, sizeof *status, stream) != cudaSuccess) {
    return CodecStatus::device_error;
  }
  return CodecStatus::ok;
}

__device__ inline uint32_t block_len(size_t count, size_t first, uint32_t block_elems) {
  return count - first < block_elems ? uint32_t(count - first) : block_elems;
}

__device__ inline void report_corrupt(uint32_t *status) {
  atomicCAS(status, 0u, uint32_t(CodecStatus::corrupt_header));
}

}  // namespace bagua::codec::gpu

#endif
