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

__host__ __device__ inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Elements of the run of at most `run` elements that starts at i of n (0
// past the end).
__device__ inline uint32_t run_len(size_t n, size_t i, uint32_t run) {
  return i >= n ? 0 : n - i < run ? uint32_t(n - i) : run;
}

// The element types of dtype.h, read and written by index on the device, one
// at a time or in runs of N consecutive elements. A run that is whole
// (valid == N) and 16-byte aligned moves as 16-byte words (memory-bound
// kernels reach the HBM rate only so); any other run moves element by element.
template <class E>
struct Dev {
  using T = typename E::T;
  static constexpr int kPerWord = 16 / sizeof(T);
  union Word {
    uint4 bits;
    T elems[kPerWord];
  };

  static __device__ float load(const T *p, size_t i) { return E::load(p[i]); }
  static __device__ void store(T *p, size_t i, float v) { p[i] = E::store(v); }

  // v[0, valid) = p[i, i + valid); the rest of v is left alone.
  template <int N>
  static __device__ void load_run(const T *p, size_t i, uint32_t valid, float (&v)[N]) {
    static_assert(N % kPerWord == 0, "a run is whole 16-byte words");
    if (valid == N && aligned16(p + i)) {
#pragma unroll
      for (int w = 0; w < N / kPerWord; ++w) {
        Word word;
        word.bits = reinterpret_cast<const uint4 *>(p + i)[w];
#pragma unroll
        for (int k = 0; k < kPerWord; ++k) v[w * kPerWord + k] = E::load(word.elems[k]);
      }
      return;
    }
    // Unrolled with a guard, not bounded by valid: v stays in registers.
#pragma unroll
    for (uint32_t k = 0; k < N; ++k) {
      if (k < valid) v[k] = load(p, i + k);
    }
  }

  // p[i, i + valid) = v[0, valid).
  template <int N>
  static __device__ void store_run(T *p, size_t i, uint32_t valid, const float (&v)[N]) {
    static_assert(N % kPerWord == 0, "a run is whole 16-byte words");
    if (valid == N && aligned16(p + i)) {
#pragma unroll
      for (int w = 0; w < N / kPerWord; ++w) {
        Word word;
#pragma unroll
        for (int k = 0; k < kPerWord; ++k) word.elems[k] = E::store(v[w * kPerWord + k]);
        reinterpret_cast<uint4 *>(p + i)[w] = word.bits;
      }
      return;
    }
#pragma unroll
    for (uint32_t k = 0; k < N; ++k) {
      if (k < valid) store(p, i + k, v[k]);
    }
  }
};
using DevF32 = Dev<elem::F32>;
using DevF16 = Dev<elem::F16>;
using DevBF16 = Dev<elem::BF16>;

// Decoded values stored in the caller's dtype, in runs of N elements from i
// (valid of them): put_run the values, put_scaled_run the cast codec's wire
// values h times inv, nan_run the canonical NaN.
template <class E>
struct StoreSink {
  typename E::T *dst;
  template <int N>
  __device__ void put_run(size_t i, const float (&v)[N], uint32_t valid) const {
    E::store_run(dst, i, valid, v);
  }
  template <int N>
  __device__ void put_scaled_run(size_t i, const float (&h)[N], float inv, uint32_t valid) const {
    float v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = cast_unscaled(h[k], inv);
    put_run(i, v, valid);
  }
  __device__ void nan_run(size_t i, uint32_t valid) const {
    for (uint32_t k = 0; k < valid; ++k) E::store(dst, i + k, canonical_nan());
  }
};

// Decoded values added into a float32 accumulator; a finite sum beyond the
// float range saturates (codec_format.h). The same runs as StoreSink.
struct AccumulateSink {
  float *acc;
  template <int N>
  __device__ void put_run(size_t i, const float (&v)[N], uint32_t valid) const {
    float a[N] = {};
    DevF32::load_run(acc, i, valid, a);
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = saturating_add(a[k], v[k]);
    DevF32::store_run(acc, i, valid, a);
  }
  template <int N>
  __device__ void put_scaled_run(size_t i, const float (&h)[N], float inv, uint32_t valid) const {
    float a[N] = {};
    DevF32::load_run(acc, i, valid, a);
#pragma unroll
    for (int k = 0; k < N; ++k) a[k] = cast_accumulated(h[k], inv, a[k]);
    DevF32::store_run(acc, i, valid, a);
  }
  __device__ void nan_run(size_t i, uint32_t valid) const {
    for (uint32_t k = 0; k < valid; ++k) acc[i + k] = canonical_nan();
  }
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

// Thread blocks (of kThreads) for one warp per item.
inline unsigned grid_for_warps(size_t warps) {
  return unsigned((warps + kThreads / 32 - 1) / (kThreads / 32));
}

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
