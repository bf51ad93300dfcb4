// q8 min-max codec on the CPU: portable reference and AVX2 path of the
// payload (one uint8 per element); the block loop and headers are minmax.h's.
// Both paths use the per-element formulas of codec_format.h; the AVX2 path
// only vectorizes them (sub, mul, round-to-nearest-even convert, saturating
// pack; fma to decode), so its bytes and values are identical to the reference.
#include "minmax.h"

namespace bagua::codec::cpu {
namespace {

struct Q8 {
  static constexpr uint8_t kTag = kTagQ8;
  static constexpr float kLevels = kQ8Levels;
  static size_t block_bytes(uint32_t n) { return q8_block_bytes(n); }
  static size_t used_bytes(uint32_t n) { return n; }

  template <class E>
  static void quantize_scalar(E e, const typename E::T *x, uint32_t n, const MinMaxParams &p,
                              uint8_t *q, uint32_t begin = 0) {
    for (uint32_t i = begin; i < n; ++i) q[i] = minmax_quantize(p, load(e, x, i));
  }

  template <class E>
  BAGUA_AVX2 static void quantize_avx2(E e, const typename E::T *x, uint32_t n,
                                       const MinMaxParams &p, uint8_t *q) {
    const __m256 vmin = _mm256_set1_ps(p.min), vscale = _mm256_set1_ps(p.scale);
    uint32_t i = 0;
    // 32 elements per iteration, saturated to [0, 255] by the packs.
    for (; i + 32 <= n; i += 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + i), quantize32(e, x + i, vmin, vscale));
    }
    quantize_scalar(e, x, n, p, q, i);
  }

  template <class Sink>
  static void dequantize_scalar(const MinMaxParams &p, const uint8_t *q, uint32_t n, size_t first,
                                const Sink &sink, uint32_t begin = 0) {
    for (uint32_t i = begin; i < n; ++i) sink.put(first + i, minmax_dequantize(p, q[i]));
  }

  // Eight bytes at q into sink element `at`.
  template <bool saturating, class Sink>
  BAGUA_AVX2 static void dequantize_one8(__m256 vmin, __m256 vstep, const uint8_t *q, size_t at,
                                         const Sink &sink) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(q));
    put_decoded8<saturating>(sink, at, dequantize8(bytes, vmin, vstep));
  }

  // Prefetches ahead in an accumulator (the encoded input is a stream the
  // hardware prefetcher keeps up with: prefetching it measured slower). The
  // sink is a copy, so its pointer stays in a register (stores through it
  // cannot change it).
  template <bool saturating, class Sink>
  BAGUA_AVX2 static void dequantize_avx2(const MinMaxParams &p, const uint8_t *q, uint32_t n,
                                         size_t first, size_t count, Sink sink) {
    const __m256 vmin = _mm256_set1_ps(p.min), vstep = _mm256_set1_ps(p.step);
    uint32_t i = 0;
    // 16 elements (one line of float output) per iteration.
    for (; i + 16 <= n; i += 16) {
      sink.prefetch(first + i, count);
      dequantize_one8<saturating>(vmin, vstep, q + i, first + i, sink);
      dequantize_one8<saturating>(vmin, vstep, q + i + 8, first + i + 8, sink);
    }
    for (; i + 8 <= n; i += 8) dequantize_one8<saturating>(vmin, vstep, q + i, first + i, sink);
    dequantize_scalar(p, q, n, first, sink, i);
  }
};

}  // namespace
}  // namespace bagua::codec::cpu

BAGUA_DEFINE_MINMAX_CODEC(q8, Q8)
