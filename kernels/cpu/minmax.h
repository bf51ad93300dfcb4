// The min-max codecs (q8, q4) on the CPU, written once: the block header
// (one pass over the block for min, max and "any NaN or Inf", portable and
// AVX2, which give the same header since min and max of finite values are
// exact in any order), the block loop of encoder and decoders, and the header
// checks. A codec supplies its payload layer as a struct C:
//   kTag, kLevels; block_bytes(n) (header + padded payload), used_bytes(n);
//   quantize_scalar / quantize_avx2(e, x, n, params, payload);
//   dequantize_scalar(params, payload, n, first, sink);
//   dequantize_avx2<saturating>(params, payload, n, first, count, sink), which
//   puts its values through put_decoded8<saturating> and calls
//   sink.prefetch(i, count) per line of output (count: elements in all).
// The AVX2 payload functions are only called for blocks whose params are not
// wide (those use the double-precision formulas). Finite overflow saturates
// (codec_format.h); the AVX2 decoders saturate only blocks that can reach the
// float limit (kNoOverflowBelow in elem.h), the plain arithmetic giving the
// same values for the others.
#ifndef BAGUA_KERNELS_CPU_MINMAX_H
#define BAGUA_KERNELS_CPU_MINMAX_H

#include <string.h>

#include "codec_cpu.h"
#include "elem.h"

namespace bagua::codec::cpu {

inline uint8_t *write_header(const MinMaxBlockHeader &h, uint8_t *blk) {
  memcpy(blk, &h, sizeof h);
  return blk + sizeof h;
}

// Min, max and non-finiteness of x[i], i < n, from the running values.
template <class E>
void scan_scalar(E e, const typename E::T *x, uint32_t begin, uint32_t n, float &mn, float &mx,
                 bool &bad) {
  for (uint32_t i = begin; i < n; ++i) {
    const float v = load(e, x, i);
    bad |= !is_finite(v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
}

template <class E>
MinMaxBlockHeader header_scalar(E e, const typename E::T *x, uint32_t n, uint8_t tag) {
  float mn = load(e, x, 0), mx = mn;
  bool bad = false;
  scan_scalar(e, x, 0, n, mn, mx, bad);
  return minmax_make_header(mn, mx, bad, n, tag);
}

BAGUA_AVX2 inline float hmin(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps(m, m, 1)));
}

BAGUA_AVX2 inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// NaN lanes are caught by the unordered compare and Inf shows up in min or
// max. This first pass reads the block from memory, so it prefetches ahead
// (up to the input's end).
template <class E>
BAGUA_AVX2 MinMaxBlockHeader header_avx2(E e, const typename E::T *x, uint32_t n,
                                         const typename E::T *end, uint8_t tag) {
  __m256 vmin[2], vmax[2], vnan = _mm256_setzero_ps();
  for (int k = 0; k < 2; ++k) {
    vmin[k] = _mm256_set1_ps(INFINITY);
    vmax[k] = _mm256_set1_ps(-INFINITY);
  }
  uint32_t i = 0;
  // 16 elements per iteration in two independent min/max chains.
  for (; i + 16 <= n; i += 16) {
    if (line_start<typename E::T>(i)) prefetch_ahead(x + i, kCacheLine / sizeof *x, end);
    for (int k = 0; k < 2; ++k) {
      const __m256 v = load8(e, x + i + 8 * k);
      vmin[k] = _mm256_min_ps(vmin[k], v);
      vmax[k] = _mm256_max_ps(vmax[k], v);
      vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
  }
  float mn = hmin(_mm256_min_ps(vmin[0], vmin[1])), mx = hmax(_mm256_max_ps(vmax[0], vmax[1]));
  bool bad = _mm256_movemask_ps(vnan) != 0;
  scan_scalar(e, x, i, n, mn, mx, bad);  // tail of a short last block
  bad |= !is_finite(mn) || !is_finite(mx);
  return minmax_make_header(mn, mx, bad, n, tag);
}

BAGUA_AVX2 inline __m256i quantize8(__m256 v, __m256 vmin, __m256 vscale) {
  return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(v, vmin), vscale));
}

// round((x[i] - min) * scale) of 32 elements as 32 bytes in order; the
// saturating packs clamp to [0, 255] and interleave 4-byte groups, which the
// permutation puts back in order.
template <class E>
BAGUA_AVX2 __m256i quantize32(E e, const typename E::T *x, __m256 vmin, __m256 vscale) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i a = quantize8(load8(e, x), vmin, vscale);
  const __m256i b = quantize8(load8(e, x + 8), vmin, vscale);
  const __m256i c = quantize8(load8(e, x + 16), vmin, vscale);
  const __m256i d = quantize8(load8(e, x + 24), vmin, vscale);
  const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
  return _mm256_permutevar8x32_epi32(bytes, order);
}

// min + q * step of the low 8 bytes of `bytes`, with one rounding (fma).
BAGUA_AVX2 inline __m256 dequantize8(__m128i bytes, __m256 vmin, __m256 vstep) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), vstep, vmin);
}

// Puts eight decoded values into sink element `at`: saturated (value and
// accumulation) for blocks that can reach the float limit (block_extreme),
// else the plain arithmetic, which gives the same results for the others.
template <bool saturating, class Sink>
BAGUA_AVX2 void put_decoded8(const Sink &sink, size_t at, __m256 v) {
  sink.template put8<saturating>(at, saturating ? saturate8(v) : v);
}

// True when the block's decoded values may reach kNoOverflowBelow, so that
// decoding or accumulating them needs saturation.
inline bool block_extreme(const MinMaxBlockHeader &h) {
  return fabsf(h.min) >= kNoOverflowBelow || fabsf(h.max) >= kNoOverflowBelow;
}

template <class C>
size_t minmax_encoded_bytes(size_t count, uint32_t block_elems) {
  if (!block_elems_valid(block_elems)) return 0;
  const size_t tail = count % block_elems;
  return count / block_elems * C::block_bytes(block_elems) + (tail ? C::block_bytes(tail) : 0);
}

// Writes the header and zeroes what the payload layer does not write (all of
// a non-finite block's payload, the padding of the others); false for a
// non-finite block, whose payload is then complete.
inline bool start_block(const MinMaxBlockHeader &h, size_t padded, size_t used, uint8_t *blk) {
  uint8_t *payload = write_header(h, blk);
  const bool finite = !(h.flags & kFlagNonFinite);
  const size_t written = finite ? used : 0;
  memset(payload + written, 0, padded - written);
  return finite;
}

template <class C, class E>
void encode_block_scalar(E e, const typename E::T *x, uint32_t n, uint8_t *blk) {
  const MinMaxBlockHeader h = header_scalar(e, x, n, C::kTag);
  if (!start_block(h, C::block_bytes(n) - sizeof h, C::used_bytes(n), blk)) return;
  C::quantize_scalar(e, x, n, minmax_params(h.min, h.max, C::kLevels), blk + sizeof h);
}

// One AVX2 function per block, so the header scan and the quantization
// inline into one loop nest over the (cache-resident) block.
template <class C, class E>
BAGUA_AVX2 void encode_block_avx2(E e, const typename E::T *x, uint32_t n, const typename E::T *end,
                                  uint8_t *blk) {
  const MinMaxBlockHeader h = header_avx2(e, x, n, end, C::kTag);
  if (!start_block(h, C::block_bytes(n) - sizeof h, C::used_bytes(n), blk)) return;
  const MinMaxParams p = minmax_params(h.min, h.max, C::kLevels);
  if (p.wide) {
    C::quantize_scalar(e, x, n, p, blk + sizeof h);
  } else {
    C::quantize_avx2(e, x, n, p, blk + sizeof h);
  }
}

template <class C>
CodecStatus encode_minmax(Isa isa, const void *src, DType t, size_t count, uint32_t block_elems,
                          void *out) {
  if (!block_elems_valid(block_elems) || (count > 0 && (src == nullptr || out == nullptr))) {
    return CodecStatus::bad_argument;
  }
  return with_dtype(t, [&](auto e) {
    const auto *x = static_cast<const typename decltype(e)::T *>(src);
    auto *blk = static_cast<uint8_t *>(out);
    // One block per iteration; only the last block may be short.
    for (size_t first = 0; first < count; first += block_elems) {
      const uint32_t n = block_len(count, first, block_elems);
      if (isa == Isa::avx2) {
        encode_block_avx2<C>(e, x + first, n, x + count, blk);
      } else {
        encode_block_scalar<C>(e, x + first, n, blk);
      }
      blk += C::block_bytes(n);
    }
    return CodecStatus::ok;
  });
}

// Checks the arguments and every header before any output is written.
template <class C>
CodecStatus check_minmax_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                                const void *dst) {
  if (!block_elems_valid(block_elems)) return CodecStatus::bad_argument;
  const CodecStatus s =
      check_decode_args(in, in_bytes, minmax_encoded_bytes<C>(count, block_elems), count, dst);
  if (s != CodecStatus::ok) return s;
  return check_block_headers<MinMaxBlockHeader>(
      static_cast<const uint8_t *>(in), count, block_elems, C::block_bytes(block_elems),
      [](const MinMaxBlockHeader &h, uint32_t n) { return minmax_header_valid(h, n, C::kTag); });
}

template <class C, class Sink>
void decode_minmax_blocks(Isa isa, const void *in, size_t count, uint32_t block_elems,
                          const Sink &sink) {
  const auto *bytes = static_cast<const uint8_t *>(in);
  const size_t stride = C::block_bytes(block_elems);
  // One block per iteration; flagged blocks become NaN as a whole.
  for (size_t first = 0, b = 0; first < count; first += block_elems, ++b) {
    const uint32_t n = block_len(count, first, block_elems);
    const MinMaxBlockHeader h = read_header<MinMaxBlockHeader>(bytes + b * stride);
    const uint8_t *payload = bytes + b * stride + sizeof h;
    const MinMaxParams p = minmax_params(h.min, h.max, C::kLevels);
    if (h.flags & kFlagNonFinite) {
      sink.fill_nan(first, n);
    } else if (isa == Isa::avx2 && !p.wide && block_extreme(h)) {
      C::template dequantize_avx2<true>(p, payload, n, first, count, sink);
    } else if (isa == Isa::avx2 && !p.wide) {
      C::template dequantize_avx2<false>(p, payload, n, first, count, sink);
    } else {
      C::dequantize_scalar(p, payload, n, first, sink);
    }
  }
}

template <class C>
CodecStatus decode_minmax(Isa isa, const void *in, size_t in_bytes, size_t count,
                          uint32_t block_elems, void *dst, DType t) {
  const CodecStatus s = check_minmax_decode<C>(in, in_bytes, count, block_elems, dst);
  if (s != CodecStatus::ok) return s;
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    decode_minmax_blocks<C>(isa, in, count, block_elems,
                            StoreSink<E>{static_cast<typename E::T *>(dst)});
    return CodecStatus::ok;
  });
}

template <class C>
CodecStatus decode_accumulate_minmax(Isa isa, const void *in, size_t in_bytes, size_t count,
                                     uint32_t block_elems, float *acc) {
  const CodecStatus s = check_minmax_decode<C>(in, in_bytes, count, block_elems, acc);
  if (s != CodecStatus::ok) return s;
  decode_minmax_blocks<C>(isa, in, count, block_elems, AccumulateSink{acc});
  return CodecStatus::ok;
}

}  // namespace bagua::codec::cpu

// Defines the entry points of codec.h and codec_cpu.h of the min-max codec
// `name` (q8, q4) whose payload layer is the struct C of namespace cpu.
#define BAGUA_DEFINE_MINMAX_CODEC(name, C)                                                         \
  namespace bagua::codec::cpu {                                                                    \
  CodecStatus name##_encode(Isa isa, const void *src, DType t, size_t count, uint32_t block_elems, \
                            void *out) {                                                           \
    return encode_minmax<C>(isa, src, t, count, block_elems, out);                                 \
  }                                                                                                \
  CodecStatus name##_decode(Isa isa, const void *in, size_t in_bytes, size_t count,                \
                            uint32_t block_elems, void *dst, DType t) {                            \
    return decode_minmax<C>(isa, in, in_bytes, count, block_elems, dst, t);                        \
  }                                                                                                \
  CodecStatus name##_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,     \
                                       uint32_t block_elems, float *acc) {                         \
    return decode_accumulate_minmax<C>(isa, in, in_bytes, count, block_elems, acc);                \
  }                                                                                                \
  }                                                                                                \
  namespace bagua::codec {                                                                         \
  size_t name##_encoded_bytes(size_t count, uint32_t block_elems) {                                \
    return cpu::minmax_encoded_bytes<cpu::C>(count, block_elems);                                  \
  }                                                                                                \
  CodecStatus name##_encode(const void *src, DType t, size_t count, uint32_t block_elems,          \
                            void *out) {                                                           \
    return cpu::name##_encode(cpu::best_isa(), src, t, count, block_elems, out);                   \
  }                                                                                                \
  CodecStatus name##_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,   \
                            void *dst, DType t) {                                                  \
    return cpu::name##_decode(cpu::best_isa(), in, in_bytes, count, block_elems, dst, t);          \
  }                                                                                                \
  CodecStatus name##_decode_accumulate(const void *in, size_t in_bytes, size_t count,              \
                                       uint32_t block_elems, float *acc) {                         \
    return cpu::name##_decode_accumulate(cpu::best_isa(), in, in_bytes, count, block_elems, acc);  \
  }                                                                                                \
  }

#endif
