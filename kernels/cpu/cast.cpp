// Cast codec on the CPU: float32 / float16 / bfloat16 input, times prescale,
// rounded to float16 or bfloat16 on the wire. Decoding multiplies by
// 1 / prescale; accumulation uses one fma per element.
#include <string.h>

#include "codec_cpu.h"
#include "elem.h"

namespace bagua::codec::cpu {
namespace {

template <class E, class W>
void encode_scalar(E e, W w, const typename E::T *x, size_t begin, size_t n, float prescale,
                   uint16_t *h) {
  for (size_t i = begin; i < n; ++i) store(w, h, i, cast_scaled(load(e, x, i), prescale));
}

template <class E, class W>
BAGUA_AVX2 void encode_avx2(E e, W w, const typename E::T *x, size_t n, float prescale,
                            uint16_t *h) {
  const __m256 vs = _mm256_set1_ps(prescale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store8(w, h + i, canonical8(_mm256_mul_ps(load8(e, x + i), vs)));
  encode_scalar(e, w, x, i, n, prescale, h);
}

template <class E>
void put_scaled(const StoreSink<E> &s, size_t i, float h, float inv) {
  s.put(i, cast_unscaled(h, inv));
}

void put_scaled(const AccumulateSink &s, size_t i, float h, float inv) {
  s.acc[i] = cast_accumulated(h, inv, s.acc[i]);
}

template <class E>
BAGUA_AVX2 void put8_scaled(const StoreSink<E> &s, size_t i, __m256 h, __m256 inv) {
  s.put8(i, canonical8(_mm256_mul_ps(h, inv)));
}

BAGUA_AVX2 void put8_scaled(const AccumulateSink &s, size_t i, __m256 h, __m256 inv) {
  _mm256_storeu_ps(s.acc + i, canonical8(_mm256_fmadd_ps(h, inv, _mm256_loadu_ps(s.acc + i))));
}

template <class W, class Sink>
void decode_scalar(W w, const uint16_t *h, size_t begin, size_t n, float inv, const Sink &sink) {
  for (size_t i = begin; i < n; ++i) put_scaled(sink, i, load(w, h, i), inv);
}

template <class W, class Sink>
BAGUA_AVX2 void decode_avx2(W w, const uint16_t *h, size_t n, float inv, const Sink &sink) {
  const __m256 vinv = _mm256_set1_ps(inv);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) put8_scaled(sink, i, load8(w, h + i), vinv);
  decode_scalar(w, h, i, n, inv, sink);
}

// Calls fn with the wire element tag (F16 or BF16) of a valid format.
template <class Fn>
auto with_wire(CastFormat f, Fn &&fn) {
  return f == CastFormat::fp16 ? fn(F16{}) : fn(BF16{});
}

template <class Sink>
CodecStatus decode_cast(Isa isa, const void *in, size_t in_bytes, size_t count, const void *dst,
                        const Sink &sink) {
  CodecStatus s = check_decode_args(in, in_bytes, cast_encoded_bytes(count), count, dst);
  if (s != CodecStatus::ok) return s;
  CastHeader hdr;
  memcpy(&hdr, in, sizeof hdr);
  if (!cast_header_valid(hdr, count)) return CodecStatus::corrupt_header;
  const auto *h = reinterpret_cast<const uint16_t *>(static_cast<const uint8_t *>(in) + sizeof hdr);
  const float inv = 1.0f / hdr.prescale;
  return with_wire(CastFormat(hdr.format), [&](auto w) {
    if (isa == Isa::avx2) {
      decode_avx2(w, h, count, inv, sink);
    } else {
      decode_scalar(w, h, 0, count, inv, sink);
    }
    return CodecStatus::ok;
  });
}

}  // namespace

CodecStatus cast_encode(Isa isa, const void *src, DType t, size_t count, CastFormat format,
                        float prescale, void *out) {
  if (!cast_format_valid(uint8_t(format)) || !cast_prescale_valid(prescale) || out == nullptr ||
      (count > 0 && src == nullptr)) {
    return CodecStatus::bad_argument;
  }
  const CastHeader hdr{kTagCast, uint8_t(format), 0, prescale, count};
  auto *bytes = static_cast<uint8_t *>(out);
  auto *h = reinterpret_cast<uint16_t *>(bytes + sizeof hdr);
  return with_dtype(t, [&](auto e) {
    const auto *x = static_cast<const typename decltype(e)::T *>(src);
    with_wire(format, [&](auto w) {
      if (isa == Isa::avx2) {
        encode_avx2(e, w, x, count, prescale, h);
      } else {
        encode_scalar(e, w, x, 0, count, prescale, h);
      }
    });
    memcpy(bytes, &hdr, sizeof hdr);
    memset(h + count, 0, cast_encoded_bytes(count) - sizeof hdr - 2 * count);
    return CodecStatus::ok;
  });
}

CodecStatus cast_decode(Isa isa, const void *in, size_t in_bytes, size_t count, void *dst,
                        DType t) {
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    return decode_cast(isa, in, in_bytes, count, dst,
                       StoreSink<E>{static_cast<typename E::T *>(dst)});
  });
}

CodecStatus cast_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                   float *acc) {
  return decode_cast(isa, in, in_bytes, count, acc, AccumulateSink{acc});
}

}  // namespace bagua::codec::cpu

namespace bagua::codec {

size_t cast_encoded_bytes(size_t count) { return sizeof(CastHeader) + round_up(2 * count, 16); }

CodecStatus cast_encode(const void *src, DType t, size_t count, CastFormat format, float prescale,
                        void *out) {
  return cpu::cast_encode(cpu::best_isa(), src, t, count, format, prescale, out);
}

CodecStatus cast_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t) {
  return cpu::cast_decode(cpu::best_isa(), in, in_bytes, count, dst, t);
}

CodecStatus cast_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc) {
  return cpu::cast_decode_accumulate(cpu::best_isa(), in, in_bytes, count, acc);
}

}  // namespace bagua::codec
