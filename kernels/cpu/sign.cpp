// 1-bit sign codec on the CPU with error feedback. The scale (mean |x|) is
// summed in the lane order fixed by codec_format.h, so the AVX2 path and the
// reference agree bit for bit.
#include <math.h>
#include <string.h>

#include <algorithm>

#include "codec_cpu.h"
#include "elem.h"

namespace bagua::codec::cpu {
namespace {

// The value that gets encoded: g + residual, or g alone without a residual.
float fed(const float *g, const float *r, size_t i) { return r ? g[i] + r[i] : g[i]; }

BAGUA_AVX2 __m256 fed8(const float *g, const float *r, size_t i) {
  const __m256 v = _mm256_loadu_ps(g + i);
  return r ? _mm256_add_ps(v, _mm256_loadu_ps(r + i)) : v;
}

// Adds |v| of elements [begin, n) into their lanes p[i % kSignLanes].
void abs_sum_scalar(const float *g, const float *r, uint32_t begin, uint32_t n, double *p) {
  for (uint32_t i = begin; i < n; ++i) p[i % kSignLanes] += double(fabsf(fed(g, r, i)));
}

// Same lanes as abs_sum_scalar, 32 elements (eight 4-double vectors) per
// iteration; returns how many elements it consumed.
BAGUA_AVX2 uint32_t abs_sum_avx2(const float *g, const float *r, uint32_t n, double *p) {
  __m256d acc[8];
  for (__m256d &a : acc) a = _mm256_setzero_pd();
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  uint32_t i = 0;
  for (; i + kSignLanes <= n; i += kSignLanes) {
    for (int k = 0; k < 4; ++k) {
      const __m256 a = _mm256_and_ps(fed8(g, r, i + 8 * k), abs_mask);
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
BAGUA_AVX2 uint32_t pack_avx2(const float *g, float *r, uint32_t n, float scale, uint8_t *bits) {
  const __m256 vs = _mm256_set1_ps(scale), sign = _mm256_set1_ps(-0.0f);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = fed8(g, r, i);
    bits[i / 8] = uint8_t(_mm256_movemask_ps(v));
    if (r) _mm256_storeu_ps(r + i, _mm256_sub_ps(v, _mm256_or_ps(_mm256_and_ps(v, sign), vs)));
  }
  return i;
}

void encode_block(Isa isa, const float *g, float *r, uint32_t n, uint8_t *blk) {
  double lanes[kSignLanes] = {};
  const uint32_t summed = isa == Isa::avx2 ? abs_sum_avx2(g, r, n, lanes) : 0;
  abs_sum_scalar(g, r, summed, n, lanes);
  const SignBlockHeader h = sign_make_header(lane_total(lanes), n);
  memcpy(blk, &h, sizeof h);
  uint8_t *bits = blk + sizeof h;
  memset(bits, 0, sign_block_bytes(n) - sizeof h);
  if (h.flags & kFlagNonFinite) return;  // residual left unchanged
  const uint32_t packed = isa == Isa::avx2 ? pack_avx2(g, r, n, h.scale, bits) : 0;
  pack_scalar(g, r, packed, n, h.scale, bits);
}

bool bit_at(const uint8_t *bits, uint32_t i) { return (bits[i / 8] >> (i % 8)) & 1; }

template <class Sink>
void unpack_scalar(const uint8_t *bits, uint32_t begin, uint32_t n, float scale, size_t first,
                   const Sink &sink) {
  for (uint32_t i = begin; i < n; ++i) sink.put(first + i, sign_value(scale, bit_at(bits, i)));
}

// One payload byte per iteration: lane k tests bit k and takes the sign bit.
template <class Sink>
BAGUA_AVX2 void unpack_avx2(const uint8_t *bits, uint32_t n, float scale, size_t first,
                            const Sink &sink) {
  const __m256i lane_bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 vs = _mm256_set1_ps(scale), sign = _mm256_set1_ps(-0.0f);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i / 8]), lane_bit);
    const __m256 neg = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, lane_bit));
    sink.put8(first + i, _mm256_xor_ps(vs, _mm256_and_ps(neg, sign)));
  }
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
    } else if (isa == Isa::avx2) {
      unpack_avx2(bits, n, h.scale, first, sink);
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
  // One block per iteration; only the last block may be short.
  for (size_t first = 0; first < count; first += block_elems) {
    const uint32_t n = block_len(count, first, block_elems);
    encode_block(isa, g + first, residual ? residual + first : nullptr, n, blk);
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
