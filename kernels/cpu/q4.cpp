// q4 min-max codec on the CPU: portable reference and AVX2 path of the
// payload (two 4-bit values per byte, the even element in the low nibble);
// the block loop and headers are minmax.h's, shared with q8. Both paths use
// the per-element formulas of codec_format.h, so their bytes and values are
// identical.
#include "minmax.h"

namespace bagua::codec::cpu {
namespace {

struct Q4 {
  static constexpr uint8_t kTag = kTagQ4;
  static constexpr float kLevels = kQ4Levels;
  static size_t block_bytes(uint32_t n) { return q4_block_bytes(n); }
  static size_t used_bytes(uint32_t n) { return (n + 1) / 2; }

  // Pairs of elements from `begin` (even); an odd last element gets a zero high nibble.
  template <class E>
  static void quantize_scalar(E e, const typename E::T *x, uint32_t n, const MinMaxParams &p,
                              uint8_t *q, uint32_t begin = 0) {
    for (uint32_t i = begin; i < n; i += 2) {
      const uint8_t odd = i + 1 < n ? minmax_quantize(p, load(e, x, i + 1)) : 0;
      q[i / 2] = q4_pack(minmax_quantize(p, load(e, x, i)), odd);
    }
  }

  template <class E>
  BAGUA_AVX2 static void quantize_avx2(E e, const typename E::T *x, uint32_t n,
                                       const MinMaxParams &p, uint8_t *q) {
    const __m256 vmin = _mm256_set1_ps(p.min), vscale = _mm256_set1_ps(p.scale);
    const __m256i top = _mm256_set1_epi8(15);
    const __m256i weights = _mm256_set1_epi16(0x1001);  // even byte * 1 + odd byte * 16
    uint32_t i = 0;
    // 64 elements per iteration: two groups of 32 in-order bytes clamped to
    // [0, 15], each byte pair merged into a 16-bit even + 16 * odd, the words
    // packed to bytes; the pack interleaves 8-byte groups, the permute undoes it.
    for (; i + 64 <= n; i += 64) {
      const __m256i a = _mm256_min_epu8(quantize32(e, x + i, vmin, vscale), top);
      const __m256i b = _mm256_min_epu8(quantize32(e, x + i + 32, vmin, vscale), top);
      const __m256i words =
          _mm256_packus_epi16(_mm256_maddubs_epi16(a, weights), _mm256_maddubs_epi16(b, weights));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + i / 2),
                          _mm256_permute4x64_epi64(words, 0xd8));
    }
    quantize_scalar(e, x, n, p, q, i);
  }

  template <class Sink>
  static void dequantize_scalar(const MinMaxParams &p, const uint8_t *q, uint32_t n, size_t first,
                                const Sink &sink, uint32_t begin = 0) {
    for (uint32_t i = begin; i < n; ++i) sink.put(first + i, minmax_dequantize(p, q4_nibble(q, i)));
  }

  // Prefetches ahead in an accumulator, as q8's decoder does; the sink is a
  // copy, so its pointer stays in a register.
  template <bool saturating, class Sink>
  BAGUA_AVX2 static void dequantize_avx2(const MinMaxParams &p, const uint8_t *q, uint32_t n,
                                         size_t first, size_t count, Sink sink) {
    const __m256 vmin = _mm256_set1_ps(p.min), vstep = _mm256_set1_ps(p.step);
    const __m128i low = _mm_set1_epi8(0x0f);
    uint32_t i = 0;
    // 32 elements (16 bytes, two lines of float output) per iteration: split
    // the nibbles, interleave them back into element order, convert eight at
    // a time.
    for (; i + 32 <= n; i += 32) {
      sink.prefetch(first + i, count);
      sink.prefetch(first + i + 16, count);
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i *>(q + i / 2));
      const __m128i even = _mm_and_si128(packed, low);
      const __m128i odd = _mm_and_si128(_mm_srli_epi16(packed, 4), low);
      const __m128i head = _mm_unpacklo_epi8(even, odd), tail = _mm_unpackhi_epi8(even, odd);
      put_decoded8<saturating>(sink, first + i, dequantize8(head, vmin, vstep));
      put_decoded8<saturating>(sink, first + i + 8,
                               dequantize8(_mm_srli_si128(head, 8), vmin, vstep));
      put_decoded8<saturating>(sink, first + i + 16, dequantize8(tail, vmin, vstep));
      put_decoded8<saturating>(sink, first + i + 24,
                               dequantize8(_mm_srli_si128(tail, 8), vmin, vstep));
    }
    dequantize_scalar(p, q, n, first, sink, i);
  }
};

}  // namespace
}  // namespace bagua::codec::cpu

BAGUA_DEFINE_MINMAX_CODEC(q4, Q4)
