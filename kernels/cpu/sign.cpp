// 1-bit sign codec on the CPU with error feedback. The scale (mean |x|) is
// summed in the lane order fixed by codec_format.h, so the AVX2 path and the
// reference agree bit for bit; the AVX2 path saturates only where a sum can
// overflow (encode_block, decode_blocks), which gives the same values.
#include <math.h>
#include <string.h>

#include <algorithm>

#include "codec_cpu.h"
#include "elem.h"

namespace bagua::codec::cpu {
namespace {

// The value that gets encoded: g + residual (saturated, so finite inputs
// never make a non-finite block), or g alone without a residual.
float fed(const float *g, const float *r, size_t i) {
  return r ? saturating_add(g[i], r[i]) : g[i];
}

// fed() eight lanes at a time; with_residual is fixed per call (no branch in
// the loops). Without `saturating` it is the plain sum, which equals the
// saturated one unless the sum overflows (encode_block checks).
template <bool with_residual, bool saturating>
BAGUA_AVX2 __m256 fed8(const float *g, const float *r, size_t i) {
  const __m256 v = _mm256_loadu_ps(g + i);
  if constexpr (!with_residual) return v;
  const __m256 w = _mm256_loadu_ps(r + i);
  return saturating ? saturating_add8(v, w) : _mm256_add_ps(v, w);
}

// Adds |v| of elements [begin, n) into their lanes p[i % kSignLanes].
void abs_sum_scalar(const float *g, const float *r, uint32_t begin, uint32_t n, double *p) {
  for (uint32_t i = begin; i < n; ++i) p[i % kSignLanes] += double(fabsf(fed(g, r, i)));
}

// Same lanes as abs_sum_scalar, 32 elements (eight 4-double vectors) per
// iteration; returns how many elements it consumed. This first pass reads
// the block from memory, so for large inputs (g_end set) it prefetches g and
// r ahead, up to g_end / r_end.
template <bool with_residual, bool saturating>
BAGUA_AVX2 uint32_t abs_sum_avx2(const float *g, const float *r, uint32_t n, const float *g_end,
                                 const float *r_end, double *p) {
  __m256d acc[8];
  for (__m256d &a : acc) a = _mm256_setzero_pd();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  uint32_t i = 0;
  for (; i + kSignLanes <= n; i += kSignLanes) {
    if (g_end) {
      prefetch_ahead(g + i, kSignLanes, g_end);
      if (with_residual) prefetch_ahead(r + i, kSignLanes, r_end);
    }
    for (int k = 0; k < 4; ++k) {
      const __m256 a = _mm256_and_ps(fed8<with_residual, saturating>(g, r, i + 8 * k), abs_mask);
      acc[2 * k] = _mm256_add_pd(acc[2 * k], _mm256_cvtps_pd(_mm256_castps256_ps128(a)));
      acc[2 * k + 1] = _mm256_add_pd(acc[2 * k + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
    }
  }
  for (int m = 0; m < 8; ++m) _mm256_storeu_pd(p + 4 * m, acc[m]);
  return i;
}

// Combines the lanes by halving: lane j += lane j + half.
double lane_total(double *p) {
  for (uint32_t half = kSignLanes / 2; half > 0; half /= 2) {
    for (uint32_t j = 0; j < half; ++j) p[j] += p[j + half];
  }
  return p[0];
}

// Sets the sign bits of [begin, n) in a zeroed payload and updates the residual.
void pack_scalar(const float *g, float *r, uint32_t begin, uint32_t n, float scale, uint8_t *bits) {
  for (uint32_t i = begin; i < n; ++i) {
    const float v = fed(g, r, i);
    const bool neg = sign_bit(v);
    bits[i / 8] |= uint8_t(uint8_t(neg) << (i % 8));
    if (r) r[i] = v - sign_value(scale, neg);
  }
}

// Eight elements per iteration: movemask yields the payload byte directly and
// the decoded value is scale with the sign bit of v.
template <bool with_residual, bool saturating>
BAGUA_AVX2 uint32_t pack_avx2(const float *g, float *r, uint32_t n, float scale, uint8_t *bits) {
  const __m256 vs = _mm256_set1_ps(scale), sign = _mm256_set1_ps(-0.0f);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = fed8<with_residual, saturating>(g, r, i);
    bits[i / 8] = uint8_t(_mm256_movemask_ps(v));
    if (with_residual)
      _mm256_storeu_ps(r + i, _mm256_sub_ps(v, _mm256_or_ps(_mm256_and_ps(v, sign), vs)));
  }
  return i;
}

// mean |v| of the block as lane sums (vector part, then the scalar tail) and
// their total; `left` elements of the input start at g, for the prefetch
// (0: no prefetch).
template <bool with_residual, bool saturating>
double block_abs_sum(Isa isa, const float *g, const float *r, uint32_t n, size_t left) {
  double lanes[kSignLanes] = {};
  const uint32_t summed = isa == Isa::avx2 ? abs_sum_avx2<with_residual, saturating>(
                                                 g, r, n, left ? g + left : nullptr,
                                                 with_residual && left ? r + left : nullptr, lanes)
                                           : 0;
  abs_sum_scalar(g, r, summed, n, lanes);
  return lane_total(lanes);
}

// Encodes the block of n elements at g (and r). The vector passes first take
// the plain g + r: a finite total proves that no sum overflowed (an overflow
// adds Inf), so the result equals the saturated one. Otherwise (an overflow,
// or a non-finite input) the |v| pass is redone saturated, and so is packing.
template <bool with_residual>
void encode_block(Isa isa, const float *g, float *r, uint32_t n, size_t left, uint8_t *blk) {
  double total = block_abs_sum<with_residual, false>(isa, g, r, n, left);
  const bool saturating = with_residual && !isfinite(total);
  if (saturating) total = block_abs_sum<with_residual, true>(isa, g, r, n, left);
  const SignBlockHeader h = sign_make_header(total, n);
  memcpy(blk, &h, sizeof h);
  uint8_t *bits = blk + sizeof h;
  memset(bits, 0, sign_block_bytes(n) - sizeof h);
  if (h.flags & kFlagNonFinite) return;  // residual left unchanged
  uint32_t packed = 0;
  if (isa == Isa::avx2) {
    packed = saturating ? pack_avx2<with_residual, true>(g, r, n, h.scale, bits)
                        : pack_avx2<with_residual, false>(g, r, n, h.scale, bits);
  }
  pack_scalar(g, r, packed, n, h.scale, bits);
}

bool bit_at(const uint8_t *bits, uint32_t i) { return (bits[i / 8] >> (i % 8)) & 1; }

template <class Sink>
void unpack_scalar(const uint8_t *bits, uint32_t begin, uint32_t n, float scale, size_t first,
                   const Sink &sink) {
  for (uint32_t i = begin; i < n; ++i) sink.put(first + i, sign_value(scale, bit_at(bits, i)));
}

// Decodes one payload byte into sink elements at, at + 8: lane k tests bit
// k and takes the sign bit. Accumulating saturates only for a scale at or
// above kNoOverflowBelow (below it the plain sum is the same).
template <bool saturating, class Sink>
BAGUA_AVX2 void unpack8(uint8_t byte, __m256 vs, size_t at, const Sink &sink) {
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i b = _mm256_and_si256(_mm256_set1_epi32(byte), lane_bit);
  const __m256 neg = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, lane_bit));
  sink.template put8<saturating>(at, _mm256_xor_ps(vs, _mm256_and_ps(neg, _mm256_set1_ps(-0.0f))));
}

// Prefetches ahead in the output (of count elements); the sink is a copy,
// so its pointer stays in a register.
template <bool saturating, class Sink>
BAGUA_AVX2 void unpack_avx2(const uint8_t *bits, uint32_t n, float scale, size_t first,
                            size_t count, Sink sink) {
  const __m256 vs = _mm256_set1_ps(scale);
  uint32_t i = 0;
  // 16 elements (one line of float output) per iteration.
  for (; i + 16 <= n; i += 16) {
    sink.prefetch(first + i, count);
    unpack8<saturating>(bits[i / 8], vs, first + i, sink);
    unpack8<saturating>(bits[i / 8 + 1], vs, first + i + 8, sink);
  }
  for (; i + 8 <= n; i += 8) unpack8<saturating>(bits[i / 8], vs, first + i, sink);
  unpack_scalar(bits, i, n, scale, first, sink);
}

// Every header is checked before any output is written.
CodecStatus validate_blocks(const uint8_t *in, size_t count, uint32_t block_elems) {
  return check_block_headers<SignBlockHeader>(
      in, count, block_elems, sign_block_bytes(block_elems),
      [](const SignBlockHeader &h, uint32_t) { return sign_header_valid(h); });
}

template <class Sink>
CodecStatus decode_blocks(Isa isa, const void *in, size_t in_bytes, size_t count,
                          uint32_t block_elems, const void *dst, const Sink &sink) {
  if (!block_elems_valid(block_elems)) return CodecStatus::bad_argument;
  CodecStatus s =
      check_decode_args(in, in_bytes, sign_encoded_bytes(count, block_elems), count, dst);
  const auto *bytes = static_cast<const uint8_t *>(in);
  if (s == CodecStatus::ok) s = validate_blocks(bytes, count, block_elems);
  if (s != CodecStatus::ok) return s;
  const size_t stride = sign_block_bytes(block_elems);
  // One block per iteration; flagged blocks become NaN as a whole.
  for (size_t first = 0, b = 0; first < count; first += block_elems, ++b) {
    const uint32_t n = block_len(count, first, block_elems);
    const SignBlockHeader h = read_header<SignBlockHeader>(bytes + b * stride);
    const uint8_t *bits = bytes + b * stride + sizeof h;
    if (h.flags & kFlagNonFinite) {
      sink.fill_nan(first, n);
    } else if (isa == Isa::avx2 && h.scale >= kNoOverflowBelow) {
      unpack_avx2<true>(bits, n, h.scale, first, count, sink);
    } else if (isa == Isa::avx2) {
      unpack_avx2<false>(bits, n, h.scale, first, count, sink);
    } else {
      unpack_scalar(bits, 0, n, h.scale, first, sink);
    }
  }
  return CodecStatus::ok;
}

}  // namespace

CodecStatus sign_encode_with_feedback(Isa isa, const float *g, float *residual, size_t count,
                                      uint32_t block_elems, void *out) {
  if (!block_elems_valid(block_elems) || (count > 0 && (g == nullptr || out == nullptr))) {
    return CodecStatus::bad_argument;
  }
  auto *blk = static_cast<uint8_t *>(out);
  const bool prefetch = count * sizeof *g >= kPrefetchMinBytes;
  // One block per iteration; only the last block may be short.
  for (size_t first = 0; first < count; first += block_elems) {
    const uint32_t n = block_len(count, first, block_elems);
    const size_t left = prefetch ? count - first : 0;
    if (residual) {
      encode_block<true>(isa, g + first, residual + first, n, left, blk);
    } else {
      encode_block<false>(isa, g + first, nullptr, n, left, blk);
    }
    blk += sign_block_bytes(n);
  }
  return CodecStatus::ok;
}

CodecStatus sign_decode(Isa isa, const void *in, size_t in_bytes, size_t count,
                        uint32_t block_elems, void *dst, DType t) {
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    const StoreSink<E> sink{static_cast<typename E::T *>(dst)};
    return decode_blocks(isa, in, in_bytes, count, block_elems, dst, sink);
  });
}

CodecStatus sign_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                   uint32_t block_elems, float *acc) {
  return decode_blocks(isa, in, in_bytes, count, block_elems, acc, AccumulateSink{acc});
}

}  // namespace bagua::codec::cpu

namespace bagua::codec {

size_t sign_encoded_bytes(size_t count, uint32_t block_elems) {
  if (!block_elems_valid(block_elems)) return 0;
  const size_t tail = count % block_elems;
  return count / block_elems * sign_block_bytes(block_elems) + (tail ? sign_block_bytes(tail) : 0);
}

CodecStatus sign_encode_with_feedback(const float *g, float *residual, size_t count,
                                      uint32_t block_elems, void *out) {
  return cpu::sign_encode_with_feedback(cpu::best_isa(), g, residual, count, block_elems, out);
}

CodecStatus sign_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                        void *dst, DType t) {
  return cpu::sign_decode(cpu::best_isa(), in, in_bytes, count, block_elems, dst, t);
}

CodecStatus sign_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                   uint32_t block_elems, float *acc) {
  return cpu::sign_decode_accumulate(cpu::best_isa(), in, in_bytes, count, block_elems, acc);
}

}  // namespace bagua::codec
