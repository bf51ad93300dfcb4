// The host kernels of every wire format in codec.h's one shape, by name.
#include <string.h>

#include "codec.h"

namespace bagua::codec {
namespace {

// Blocked codecs take the block size alone.
template <CodecStatus (*Decode)(const void *, size_t, size_t, uint32_t, void *, DType),
          CodecStatus (*Accumulate)(const void *, size_t, size_t, uint32_t, float *)>
struct BlockedDecoders {
  static CodecStatus decode(const CodecParams &p, const void *in, size_t bytes, size_t count,
                            void *dst, DType t) {
    return Decode(in, bytes, count, p.block, dst, t);
  }
  static CodecStatus accumulate(const CodecParams &p, const void *in, size_t bytes, size_t count,
                                float *acc) {
    return Accumulate(in, bytes, count, p.block, acc);
  }
};

template <CodecStatus (*Encode)(const void *, DType, size_t, uint32_t, void *),
          CodecStatus (*Decode)(const void *, size_t, size_t, uint32_t, void *, DType),
          CodecStatus (*Accumulate)(const void *, size_t, size_t, uint32_t, float *)>
struct Blocked : BlockedDecoders<Decode, Accumulate> {
  static CodecStatus encode(const CodecParams &p, const void *src, DType t, size_t count,
                            void *out) {
    return Encode(src, t, count, p.block, out);
  }
};

using Q8 = Blocked<q8_encode, q8_decode, q8_decode_accumulate>;
using Q4 = Blocked<q4_encode, q4_decode, q4_decode_accumulate>;

// Casts take the prescale; the header names the format, so decoding is shared.
template <CastFormat Format>
struct Cast {
  static size_t encoded_bytes(size_t count, uint32_t) { return cast_encoded_bytes(count); }
  static CodecStatus encode(const CodecParams &p, const void *src, DType t, size_t count,
                            void *out) {
    return cast_encode(src, t, count, Format, p.prescale, out);
  }
  static CodecStatus decode(const CodecParams &, const void *in, size_t bytes, size_t count,
                            void *dst, DType t) {
    return cast_decode(in, bytes, count, dst, t);
  }
  static CodecStatus accumulate(const CodecParams &, const void *in, size_t bytes, size_t count,
                                float *acc) {
    return cast_decode_accumulate(in, bytes, count, acc);
  }
};

// Sign reads float32 and updates the residual (error feedback).
CodecStatus sign_encode(const CodecParams &p, const void *src, DType t, size_t count, void *out) {
  if (t != DType::f32) return CodecStatus::bad_argument;
  return sign_encode_with_feedback(static_cast<const float *>(src), p.residual, count, p.block,
                                   out);
}
using Sign = BlockedDecoders<sign_decode, sign_decode_accumulate>;

// MXFP8's block is its format's.
struct Mx {
  static size_t encoded_bytes(size_t count, uint32_t) { return mxfp8_encoded_bytes(count); }
  static CodecStatus encode(const CodecParams &, const void *src, DType t, size_t count,
                            void *out) {
    return mxfp8_encode(src, t, count, out);
  }
  static CodecStatus decode(const CodecParams &, const void *in, size_t bytes, size_t count,
                            void *dst, DType t) {
    return mxfp8_decode(in, bytes, count, dst, t);
  }
  static CodecStatus accumulate(const CodecParams &, const void *in, size_t bytes, size_t count,
                                float *acc) {
    return mxfp8_decode_accumulate(in, bytes, count, acc);
  }
};

constexpr HostCodecKernels kKernels[] = {
    {"q8", q8_encoded_bytes, Q8::encode, Q8::decode, Q8::accumulate},
    {"q4", q4_encoded_bytes, Q4::encode, Q4::decode, Q4::accumulate},
    {"fp16", Cast<CastFormat::fp16>::encoded_bytes, Cast<CastFormat::fp16>::encode,
     Cast<CastFormat::fp16>::decode, Cast<CastFormat::fp16>::accumulate},
    {"bf16", Cast<CastFormat::bf16>::encoded_bytes, Cast<CastFormat::bf16>::encode,
     Cast<CastFormat::bf16>::decode, Cast<CastFormat::bf16>::accumulate},
    {"sign", sign_encoded_bytes, sign_encode, Sign::decode, Sign::accumulate},
    {"mxfp8", Mx::encoded_bytes, Mx::encode, Mx::decode, Mx::accumulate},
};

}  // namespace

const HostCodecKernels *find_host_kernels(const char *wire) {
  for (const HostCodecKernels &k : kKernels)
    if (strcmp(k.wire, wire) == 0) return &k;
  return nullptr;
}

}  // namespace bagua::codec
