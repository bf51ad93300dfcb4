// MXFP8 codec on the CPU (E4M3 elements in blocks of 32 with a power-of-two
// scale; format in codec_format.h). One portable path: per block a pass for
// the largest magnitude, then one integer rounding per element; decoding is
// a product of exact values, an E4M3 byte's value from a table.
#include <string.h>

#include "codec_cpu.h"
#include "elem.h"

namespace bagua::codec::cpu {
namespace {

// The block's scale byte; kMxNonFiniteScale when it holds NaN or Inf.
template <class E>
uint8_t block_scale(E e, const typename E::T *x, size_t first, size_t n) {
  float amax = 0;
  bool finite = true;
  for (size_t i = first; i < first + n; ++i) {
    const float v = load(e, x, i);
    finite = finite && is_finite(v);
    const float a = fabsf(v);
    amax = a > amax ? a : amax;
  }
  return finite ? mx_scale_byte(amax) : kMxNonFiniteScale;
}

template <class E>
void encode_blocks(E e, const typename E::T *x, size_t count, uint8_t *scales, uint8_t *elems) {
  for (size_t first = 0, b = 0; first < count; first += kMxBlockElems, ++b) {
    const size_t n = count - first < kMxBlockElems ? count - first : kMxBlockElems;
    const uint8_t scale = block_scale(e, x, first, n);
    scales[b] = scale;
    if (scale == kMxNonFiniteScale) {
      memset(elems + first, 0, n);
      continue;
    }
    for (size_t i = first; i < first + n; ++i) elems[i] = mx_quantize(load(e, x, i), scale);
  }
}

// Every E4M3 byte's value (e4m3_value), so decoding takes no branch per element.
struct E4m3Table {
  float value[256];
  E4m3Table() {
    for (int c = 0; c < 256; ++c) value[c] = e4m3_value(uint8_t(c));
  }
};
const E4m3Table kE4m3;

template <class Sink>
CodecStatus decode_blocks(const void *in, size_t in_bytes, size_t count, const void *dst,
                          const Sink &sink) {
  const CodecStatus s = check_decode_args(in, in_bytes, mx_encoded_bytes(count), count, dst);
  if (s != CodecStatus::ok) return s;
  MxHeader h;
  memcpy(&h, in, sizeof h);
  if (!mx_header_valid(h, count)) return CodecStatus::corrupt_header;
  const auto *scales = static_cast<const uint8_t *>(in) + sizeof h;
  const uint8_t *elems = scales + round_up(mx_blocks(count), 16);
  for (size_t first = 0, b = 0; first < count; first += kMxBlockElems, ++b) {
    const size_t n = count - first < kMxBlockElems ? count - first : kMxBlockElems;
    if (scales[b] == kMxNonFiniteScale) {
      sink.fill_nan(first, n);
      continue;
    }
    const float scale = mx_scale_value(scales[b]);
    // The table's product is mx_dequantize's: exact, saturated, NaN canonical.
    for (size_t i = first; i < first + n; ++i)
      sink.put(i, canonical(saturate(kE4m3.value[elems[i]] * scale)));
  }
  return CodecStatus::ok;
}

}  // namespace
}  // namespace bagua::codec::cpu

namespace bagua::codec {

size_t mxfp8_encoded_bytes(size_t count) { return mx_encoded_bytes(count); }

CodecStatus mxfp8_encode(const void *src, DType t, size_t count, void *out) {
  if (out == nullptr || (count > 0 && src == nullptr)) return CodecStatus::bad_argument;
  return cpu::with_dtype(t, [&](auto e) {
    const auto *x = static_cast<const typename decltype(e)::T *>(src);
    auto *bytes = static_cast<uint8_t *>(out);
    const MxHeader h{kTagMx, 5, 0, 0, count};
    memset(bytes, 0, mx_encoded_bytes(count));
    memcpy(bytes, &h, sizeof h);
    uint8_t *scales = bytes + sizeof h;
    cpu::encode_blocks(e, x, count, scales, scales + round_up(mx_blocks(count), 16));
    return CodecStatus::ok;
  });
}

CodecStatus mxfp8_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t) {
  return cpu::with_dtype(t, [&](auto e) {
    using E = decltype(e);
    return cpu::decode_blocks(in, in_bytes, count, dst,
                              cpu::StoreSink<E>{static_cast<typename E::T *>(dst)});
  });
}

CodecStatus mxfp8_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc) {
  return cpu::decode_blocks(in, in_bytes, count, acc, cpu::AccumulateSink{acc});
}

}  // namespace bagua::codec
