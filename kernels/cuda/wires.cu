// The device kernels of every wire format in codec_cuda.h's one shape, by name.
#include <string.h>

#include "codec_cuda.h"

namespace bagua::codec::gpu {
namespace {

// Blocked codecs take the block size alone.
template <CodecStatus (*Decode)(const void *, size_t, size_t, uint32_t, void *, DType, uint32_t *,
                                cudaStream_t),
          CodecStatus (*Accumulate)(const void *, size_t, size_t, uint32_t, float *, uint32_t *,
                                    cudaStream_t)>
struct BlockedDecoders {
  static CodecStatus decode(const CodecParams &p, const void *in, size_t bytes, size_t count,
                            void *dst, DType t, uint32_t *status, cudaStream_t s) {
    return Decode(in, bytes, count, p.block, dst, t, status, s);
  }
  static CodecStatus accumulate(const CodecParams &p, const void *in, size_t bytes, size_t count,
                                float *acc, uint32_t *status, cudaStream_t s) {
    return Accumulate(in, bytes, count, p.block, acc, status, s);
  }
};

template <CodecStatus (*Encode)(const void *, DType, size_t, uint32_t, void *, cudaStream_t),
          CodecStatus (*Decode)(const void *, size_t, size_t, uint32_t, void *, DType, uint32_t *,
                                cudaStream_t),
          CodecStatus (*Accumulate)(const void *, size_t, size_t, uint32_t, float *, uint32_t *,
                                    cudaStream_t)>
struct Blocked : BlockedDecoders<Decode, Accumulate> {
  static CodecStatus encode(const CodecParams &p, const void *src, DType t, size_t count, void *out,
                            cudaStream_t s) {
    return Encode(src, t, count, p.block, out, s);
  }
};

using Q8 = Blocked<q8_encode, q8_decode, q8_decode_accumulate>;
using Q4 = Blocked<q4_encode, q4_decode, q4_decode_accumulate>;

// Casts take the prescale; the header names the format, so decoding is shared.
template <CastFormat Format>
struct Cast {
  static CodecStatus encode(const CodecParams &p, const void *src, DType t, size_t count, void *out,
                            cudaStream_t s) {
    return cast_encode(src, t, count, Format, p.prescale, out, s);
  }
  static CodecStatus decode(const CodecParams &, const void *in, size_t bytes, size_t count,
                            void *dst, DType t, uint32_t *status, cudaStream_t s) {
    return cast_decode(in, bytes, count, dst, t, status, s);
  }
  static CodecStatus accumulate(const CodecParams &, const void *in, size_t bytes, size_t count,
                                float *acc, uint32_t *status, cudaStream_t s) {
    return cast_decode_accumulate(in, bytes, count, acc, status, s);
  }
};

// Sign reads float32 and updates the residual (error feedback).
CodecStatus sign_encode(const CodecParams &p, const void *src, DType t, size_t count, void *out,
                        cudaStream_t s) {
  if (t != DType::f32) return CodecStatus::bad_argument;
  return sign_encode_with_feedback(static_cast<const float *>(src), p.residual, count, p.block, out,
                                   s);
}
using Sign = BlockedDecoders<sign_decode, sign_decode_accumulate>;

// MXFP8's block is its format's.
struct Mx {
  static CodecStatus encode(const CodecParams &, const void *src, DType t, size_t count, void *out,
                            cudaStream_t s) {
    return mxfp8_encode(src, t, count, out, s);
  }
  static CodecStatus decode(const CodecParams &, const void *in, size_t bytes, size_t count,
                            void *dst, DType t, uint32_t *status, cudaStream_t s) {
    return mxfp8_decode(in, bytes, count, dst, t, status, s);
  }
  static CodecStatus accumulate(const CodecParams &, const void *in, size_t bytes, size_t count,
                                float *acc, uint32_t *status, cudaStream_t s) {
    return mxfp8_decode_accumulate(in, bytes, count, acc, status, s);
  }
};

constexpr DeviceCodecKernels kKernels[] = {
    {"q8", Q8::encode, Q8::decode, Q8::accumulate},
    {"q4", Q4::encode, Q4::decode, Q4::accumulate},
    {"fp16", Cast<CastFormat::fp16>::encode, Cast<CastFormat::fp16>::decode,
     Cast<CastFormat::fp16>::accumulate},
    {"bf16", Cast<CastFormat::bf16>::encode, Cast<CastFormat::bf16>::decode,
     Cast<CastFormat::bf16>::accumulate},
    {"sign", sign_encode, Sign::decode, Sign::accumulate},
    {"mxfp8", Mx::encode, Mx::decode, Mx::accumulate},
};

}  // namespace

const DeviceCodecKernels *find_device_kernels(const char *wire) {
  for (const DeviceCodecKernels &k : kKernels)
    if (strcmp(k.wire, wire) == 0) return &k;
  return nullptr;
}

}  // namespace bagua::codec::gpu
