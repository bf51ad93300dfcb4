// Element access for the CPU kernels: the element types of dtype.h as tags, scalar and
// 8-wide AVX2 conversions to and from float32 (both round to nearest even, so
// they agree bit for bit), and sinks that either store decoded values in the
// caller's dtype or add them into a float32 accumulator.
#ifndef BAGUA_KERNELS_CPU_ELEM_H
#define BAGUA_KERNELS_CPU_ELEM_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "codec.h"
#include "codec_format.h"
#include "dtype.h"

#define BAGUA_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace bagua::codec::cpu {

using elem::BF16;
using elem::F16;
using elem::F32;

template <class E>
inline float load(E, const typename E::T *p, size_t i) {
  return E::load(p[i]);
}
template <class E>
inline void store(E, typename E::T *p, size_t i, float v) {
  p[i] = E::store(v);
}

BAGUA_AVX2 inline __m256 load8(F32, const float *p) { return _mm256_loadu_ps(p); }

BAGUA_AVX2 inline __m256 load8(F16, const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}

BAGUA_AVX2 inline __m256 load8(BF16, const uint16_t *p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

BAGUA_AVX2 inline void store8(F32, float *p, __m256 v) { _mm256_storeu_ps(p, v); }

BAGUA_AVX2 inline void store8(F16, uint16_t *p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i *>(p),
                   _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Same arithmetic as float_to_bf16 in half.h, eight lanes at a time.
BAGUA_AVX2 inline void store8(BF16, uint16_t *p, __m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i high = _mm256_srli_epi32(u, 16);
  const __m256i bias =
      _mm256_add_epi32(_mm256_and_si256(high, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7fff));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, bias), 16);
  const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_castsi256_si128(packed));
}

// Software prefetch for the streaming loops: a loop whose loads stall (a
// min/max or |x| pass over a block, an accumulator) leaves one core well below
// its read bandwidth with the hardware prefetcher alone; prefetching a fixed
// distance ahead keeps enough lines in flight (doc/benchmarks.md, "What was tried: CPU codecs").
constexpr size_t kPrefetchBytes = 8192;
// Inputs smaller than this may be cache-resident (one BAGUA_SEGMENT_BYTES
// segment that the caller just wrote); where prefetching them measured slower
// (sign encode with a residual, 20 -> 16 GB/s at 1 MiB) the loops skip it.
constexpr size_t kPrefetchMinBytes = size_t(4) << 20;
constexpr size_t kCacheLine = 64;

// Prefetches the lines of [p, p + span) shifted kPrefetchBytes ahead when
// they lie before end (one bounds check per call); loops call it once per
// `span` elements they consume, a whole number of cache lines. rw says the
// loop will write the lines (an accumulator).
template <bool rw = false, class T>
inline void prefetch_ahead(const T *p, size_t span, const T *end) {
  if (size_t(end - p) * sizeof(T) <= kPrefetchBytes + span * sizeof(T)) return;
  const char *ahead = reinterpret_cast<const char *>(p) + kPrefetchBytes;
  for (size_t off = 0; off < span * sizeof(T); off += kCacheLine)
    __builtin_prefetch(ahead + off, rw, 3);
}

// True when element i of a T array starts a line's worth of elements (for
// loops that consume less than a line per iteration).
template <class T>
constexpr bool line_start(size_t i) {
  return (i * sizeof(T)) % kCacheLine == 0;
}

// canonical() of codec_format.h, eight lanes.
BAGUA_AVX2 inline __m256 canonical8(__m256 v) {
  const __m256 nan = _mm256_castsi256_ps(_mm256_set1_epi32(int(kCanonicalNanBits)));
  return _mm256_blendv_ps(v, nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

// saturate() of codec_format.h, eight lanes (NaN passes through: min/max
// return their second operand when one is NaN).
BAGUA_AVX2 inline __m256 saturate8(__m256 v) {
  const __m256 hi = _mm256_set1_ps(kFloatMax);
  return _mm256_max_ps(_mm256_set1_ps(-kFloatMax), _mm256_min_ps(hi, v));
}

// saturating_add() of codec_format.h, eight lanes: the sum is clamped to
// [min(a, b, -kFloatMax), max(a, b, kFloatMax)], so an infinite operand
// keeps its own sign's Inf and a finite overflow saturates; a NaN sum passes
// the clamp (min/max return their second operand when one is NaN) and
// becomes the canonical NaN.
BAGUA_AVX2 inline __m256 saturating_add8(__m256 a, __m256 b) {
  const __m256 hi = _mm256_max_ps(_mm256_max_ps(a, b), _mm256_set1_ps(kFloatMax));
  const __m256 lo = _mm256_min_ps(_mm256_min_ps(a, b), _mm256_set1_ps(-kFloatMax));
  return canonical8(_mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_add_ps(a, b))));
}

// Below this magnitude a value cannot make its float sum with any finite
// value overflow (|a + v| < FLT_MAX + half its ulp rounds to FLT_MAX), so
// saturating_add(a, v) == a + v: the vector loops take the plain sum for
// blocks whose values all stay below it and saturate only the others.
constexpr float kNoOverflowBelow = 0x1p102f;

// saturating_add8 for a finite v (a decoded value): the bounds need only a.
BAGUA_AVX2 inline __m256 saturating_accumulate8(__m256 a, __m256 v) {
  const __m256 hi = _mm256_max_ps(a, _mm256_set1_ps(kFloatMax));
  const __m256 lo = _mm256_min_ps(a, _mm256_set1_ps(-kFloatMax));
  return canonical8(_mm256_max_ps(lo, _mm256_min_ps(hi, _mm256_add_ps(a, v))));
}

// Decoded values go to the caller's buffer in its dtype.
template <class E>
struct StoreSink {
  typename E::T *dst;
  void put(size_t i, float v) const { store(E{}, dst, i, v); }
  void fill_nan(size_t first, size_t n) const {
    for (size_t i = first; i < first + n; ++i) put(i, canonical_nan());
  }
  // The decoders saturate decoded values themselves, so both forms store.
  template <bool saturating = false>
  BAGUA_AVX2 void put8(size_t i, __m256 v) const {
    store8(E{}, dst + i, v);
  }
  // A stream that is only written gains nothing from prefetching (measured).
  void prefetch(size_t, size_t) const {}
};

// Decoded values are added into a float32 accumulator (non-finite blocks set
// NaN); a finite sum beyond the float range saturates.
struct AccumulateSink {
  float *acc;
  void put(size_t i, float v) const { acc[i] = saturating_add(acc[i], v); }
  void fill_nan(size_t first, size_t n) const {
    for (size_t i = first; i < first + n; ++i) acc[i] = canonical_nan();
  }
  // saturating: the exact saturating sum; otherwise the plain sum, the same
  // for |v| < kNoOverflowBelow (the caller checks the block); a NaN sum
  // (the accumulator held one) is the canonical NaN either way.
  template <bool saturating = false>
  BAGUA_AVX2 void put8(size_t i, __m256 v) const {
    const __m256 a = _mm256_loadu_ps(acc + i);
    _mm256_storeu_ps(acc + i,
                     saturating ? saturating_accumulate8(a, v) : canonical8(_mm256_add_ps(a, v)));
  }
  void prefetch(size_t i, size_t count) const {
    if (line_start<float>(i)) prefetch_ahead<true>(acc + i, kCacheLine / sizeof *acc, acc + count);
  }
};

// Elements in the block of a block codec that starts at element `first`.
inline uint32_t block_len(size_t count, size_t first, uint32_t block_elems) {
  return uint32_t(count - first < block_elems ? count - first : block_elems);
}

// A block header, read without alignment assumptions.
template <class Header>
Header read_header(const uint8_t *blk) {
  Header h;
  memcpy(&h, blk, sizeof h);
  return h;
}

// Checks every block header (valid(header, elements)) before any output is
// written; blocks are `stride` bytes apart.
template <class Header, class Valid>
CodecStatus check_block_headers(const uint8_t *in, size_t count, uint32_t block_elems,
                                size_t stride, Valid valid) {
  for (size_t first = 0, b = 0; first < count; first += block_elems, ++b)
    if (!valid(read_header<Header>(in + b * stride), block_len(count, first, block_elems)))
      return CodecStatus::corrupt_header;
  return CodecStatus::ok;
}

// Calls fn with the element tag of t; f64 and unknown types are rejected.
template <class Fn>
CodecStatus with_dtype(DType t, Fn &&fn) {
  switch (t) {
    case DType::f32: return fn(F32{});
    case DType::f16: return fn(F16{});
    case DType::bf16: return fn(BF16{});
    default: return CodecStatus::bad_argument;
  }
}

}  // namespace bagua::codec::cpu

#endif
