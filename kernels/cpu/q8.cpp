// q8 min-max codec on the CPU: portable reference and AVX2 path. Both use the
// per-element formulas of codec_format.h; the AVX2 path only vectorizes them
// (sub, mul, round-to-nearest-even convert, saturating pack; fma to decode),
// so its bytes and values are identical to the reference.
#include <string.h>

#include <algorithm>

#include "codec_cpu.h"
#include "elem.h"

namespace bagua::codec::cpu {
namespace {

uint8_t *write_header(const Q8BlockHeader &h, uint8_t *blk) {
  memcpy(blk, &h, sizeof h);
  return blk + sizeof h;
}

// Zeroes the payload of a non-finite block, or just the padding after n.
void zero_payload(uint8_t *payload, uint32_t from, uint32_t n) {
  memset(payload + from, 0, round_up(n, 16) - from);
}

template <class E>
void quantize_scalar(E e, const typename E::T *x, uint32_t begin, uint32_t n, const Q8Params &p,
                     uint8_t *q) {
  for (uint32_t i = begin; i < n; ++i) q[i] = q8_quantize(p, load(e, x, i));
}

// Single pass over the block for min, max and "any NaN or Inf".
template <class E>
Q8BlockHeader header_scalar(E e, const typename E::T *x, uint32_t n) {
  float mn = load(e, x, 0), mx = mn;
  bool bad = false;
  for (uint32_t i = 0; i < n; ++i) {
    const float v = load(e, x, i);
    bad |= !is_finite(v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  return q8_make_header(mn, mx, bad, n);
}

template <class E>
void encode_block_scalar(E e, const typename E::T *x, uint32_t n, uint8_t *blk) {
  const Q8BlockHeader h = header_scalar(e, x, n);
  uint8_t *payload = write_header(h, blk);
  if (h.flags & kFlagNonFinite) return zero_payload(payload, 0, n);
  quantize_scalar(e, x, 0, n, q8_params(h.min, h.max), payload);
  zero_payload(payload, n, n);
}

BAGUA_AVX2 float hmin(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_min_ss(m, _mm_shuffle_ps(m, m, 1)));
}

BAGUA_AVX2 float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

// Min and max of finite values are exact in any order; NaN lanes are caught
// by the unordered compare and Inf shows up in min or max.
template <class E>
BAGUA_AVX2 Q8BlockHeader header_avx2(E e, const typename E::T *x, uint32_t n) {
  __m256 vmin = _mm256_set1_ps(INFINITY), vmax = _mm256_set1_ps(-INFINITY);
  __m256 vnan = _mm256_setzero_ps();
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = load8(e, x + i);
    vmin = _mm256_min_ps(vmin, v);
    vmax = _mm256_max_ps(vmax, v);
    vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  float mn = hmin(vmin), mx = hmax(vmax);
  bool bad = _mm256_movemask_ps(vnan) != 0;
  for (; i < n; ++i) {  // tail of a short last block
    const float v = load(e, x, i);
    bad |= !is_finite(v);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
  }
  bad |= !is_finite(mn) || !is_finite(mx);
  return q8_make_header(mn, mx, bad, n);
}

BAGUA_AVX2 __m256i quantize8(__m256 v, __m256 vmin, __m256 vscale) {
  return _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(v, vmin), vscale));
}

template <class E>
BAGUA_AVX2 void quantize_avx2(E e, const typename E::T *x, uint32_t n, const Q8Params &p,
                              uint8_t *q) {
  const __m256 vmin = _mm256_set1_ps(p.min), vscale = _mm256_set1_ps(p.scale);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  uint32_t i = 0;
  // 32 elements per iteration; the saturating packs clamp to [0, 255] and
  // interleave 4-byte groups, which the permutation puts back in order.
  for (; i + 32 <= n; i += 32) {
    const __m256i a = quantize8(load8(e, x + i), vmin, vscale);
    const __m256i b = quantize8(load8(e, x + i + 8), vmin, vscale);
    const __m256i c = quantize8(load8(e, x + i + 16), vmin, vscale);
    const __m256i d = quantize8(load8(e, x + i + 24), vmin, vscale);
    const __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + i),
                        _mm256_permutevar8x32_epi32(bytes, order));
  }
  quantize_scalar(e, x, i, n, p, q);
}

template <class E>
BAGUA_AVX2 void encode_block_avx2(E e, const typename E::T *x, uint32_t n, uint8_t *blk) {
  const Q8BlockHeader h = header_avx2(e, x, n);
  uint8_t *payload = write_header(h, blk);
  if (h.flags & kFlagNonFinite) return zero_payload(payload, 0, n);
  const Q8Params p = q8_params(h.min, h.max);
  if (p.wide) {
    quantize_scalar(e, x, 0, n, p, payload);
  } else {
    quantize_avx2(e, x, n, p, payload);
  }
  zero_payload(payload, n, n);
}

template <class Sink>
void dequantize_scalar(const Q8Params &p, const uint8_t *q, uint32_t begin, uint32_t n,
                       size_t first, const Sink &sink) {
  for (uint32_t i = begin; i < n; ++i) sink.put(first + i, q8_dequantize(p, q[i]));
}

template <class Sink>
BAGUA_AVX2 void dequantize_avx2(const Q8Params &p, const uint8_t *q, uint32_t n, size_t first,
                                const Sink &sink) {
  const __m256 vmin = _mm256_set1_ps(p.min), vstep = _mm256_set1_ps(p.step);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(q + i));
    const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    sink.put8(first + i, _mm256_fmadd_ps(f, vstep, vmin));
  }
  dequantize_scalar(p, q, i, n, first, sink);
}

// Every header is checked before any output is written.
CodecStatus validate_blocks(const uint8_t *in, size_t count, uint32_t block_elems) {
  return check_block_headers<Q8BlockHeader>(
      in, count, block_elems, q8_block_bytes(block_elems),
      [](const Q8BlockHeader &h, uint32_t n) { return q8_header_valid(h, n); });
}

template <class Sink>
CodecStatus decode_blocks(Isa isa, const void *in, size_t count, uint32_t block_elems,
                          const Sink &sink) {
  const auto *bytes = static_cast<const uint8_t *>(in);
  const size_t stride = q8_block_bytes(block_elems);
  const CodecStatus s = validate_blocks(bytes, count, block_elems);
  if (s != CodecStatus::ok) return s;
  // One block per iteration; flagged blocks become NaN as a whole.
  for (size_t first = 0, b = 0; first < count; first += block_elems, ++b) {
    const uint32_t n = block_len(count, first, block_elems);
    const Q8BlockHeader h = read_header<Q8BlockHeader>(bytes + b * stride);
    const uint8_t *payload = bytes + b * stride + sizeof h;
    const Q8Params p = q8_params(h.min, h.max);
    if (h.flags & kFlagNonFinite) {
      sink.fill_nan(first, n);
    } else if (isa == Isa::avx2 && !p.wide) {
      dequantize_avx2(p, payload, n, first, sink);
    } else {
      dequantize_scalar(p, payload, 0, n, first, sink);
    }
  }
  return CodecStatus::ok;
}

CodecStatus check_q8_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                            const void *dst) {
  if (!block_elems_valid(block_elems)) return CodecStatus::bad_argument;
  return check_decode_args(in, in_bytes, q8_encoded_bytes(count, block_elems), count, dst);
}

}  // namespace

CodecStatus q8_encode(Isa isa, const void *src, DType t, size_t count, uint32_t block_elems,
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
        encode_block_avx2(e, x + first, n, blk);
      } else {
        encode_block_scalar(e, x + first, n, blk);
      }
      blk += q8_block_bytes(n);
    }
    return CodecStatus::ok;
  });
}

CodecStatus q8_decode(Isa isa, const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t) {
  const CodecStatus s = check_q8_decode(in, in_bytes, count, block_elems, dst);
  if (s != CodecStatus::ok) return s;
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    const StoreSink<E> sink{static_cast<typename E::T *>(dst)};
    return decode_blocks(isa, in, count, block_elems, sink);
  });
}

CodecStatus q8_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc) {
  const CodecStatus s = check_q8_decode(in, in_bytes, count, block_elems, acc);
  if (s != CodecStatus::ok) return s;
  return decode_blocks(isa, in, count, block_elems, AccumulateSink{acc});
}

}  // namespace bagua::codec::cpu

namespace bagua::codec {

size_t q8_encoded_bytes(size_t count, uint32_t block_elems) {
  if (!block_elems_valid(block_elems)) return 0;
  const size_t tail = count % block_elems;
  return count / block_elems * q8_block_bytes(block_elems) + (tail ? q8_block_bytes(tail) : 0);
}

CodecStatus q8_encode(const void *src, DType t, size_t count, uint32_t block_elems, void *out) {
  return cpu::q8_encode(cpu::best_isa(), src, t, count, block_elems, out);
}

CodecStatus q8_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t) {
  return cpu::q8_decode(cpu::best_isa(), in, in_bytes, count, block_elems, dst, t);
}

CodecStatus q8_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc) {
  return cpu::q8_decode_accumulate(cpu::best_isa(), in, in_bytes, count, block_elems, acc);
}

}  // namespace bagua::codec
