// Compression codecs on host memory: q8 and q4 min-max, fp16/bf16 cast, 1-bit sign,
// MXFP8 microscaling.
// Wire formats: kernels/codec_format.h and doc/codecs.md. The CPU code uses
// AVX2 when the processor has it and a portable path otherwise; both produce
// the same bytes. Decoders treat their input as untrusted: they check every
// header and the exact length before writing any output, and on error leave
// dst / acc untouched.
#ifndef BAGUA_KERNELS_CODEC_H
#define BAGUA_KERNELS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "codec_format.h"
#include "dtype.h"

namespace bagua::codec {

enum class CodecStatus : uint8_t {
  ok,
  corrupt_header,  // a header field is invalid (tag, flags, min > max, counts...)
  truncated,       // in_bytes is smaller than the encoded size
  bad_argument,    // bad block size, dtype, prescale, null pointer, or in_bytes too large
  device_error,    // a CUDA call failed (codec_cuda.h only)
};

const char *codec_status_name(CodecStatus s);

// Default q8 block size: see doc/codecs.md for the measurements.
constexpr uint32_t kDefaultQ8Block = 2048;
// Default q4 block size: see doc/codecs.md, "Choosing the q4 block size".
constexpr uint32_t kDefaultQ4Block = 256;

// True when block_elems is a power of two in [kMinBlockElems, kMaxBlockElems].
bool block_size_valid(uint32_t block_elems);

// q8: 1 byte per element plus a 16-byte header per block. Encoded sizes are 0
// for an invalid block size.
size_t q8_encoded_bytes(size_t count, uint32_t block_elems);
CodecStatus q8_encode(const void *src, DType t, size_t count, uint32_t block_elems, void *out);
CodecStatus q8_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t);
// acc[i] += decode(i), in float32.
CodecStatus q8_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc);

// q4: half a byte per element plus a 16-byte header per block; same
// contract as q8 (the block's range in 15 steps instead of 255).
size_t q4_encoded_bytes(size_t count, uint32_t block_elems);
CodecStatus q4_encode(const void *src, DType t, size_t count, uint32_t block_elems, void *out);
CodecStatus q4_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t);
CodecStatus q4_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc);

// Cast: 2 bytes per element plus a 16-byte header. prescale multiplies the
// input before the cast (e.g. 1/n so a sum of n ranks cannot overflow fp16);
// decoding divides it out again (multiplies by 1/prescale).
size_t cast_encoded_bytes(size_t count);
CodecStatus cast_encode(const void *src, DType t, size_t count, CastFormat format, float prescale,
                        void *out);
CodecStatus cast_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t);
CodecStatus cast_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc);

// 1-bit sign with per-block scale mean |x|. With residual != NULL it encodes
// v = g + residual and then sets residual = v - decode(encode(v)) (error
// feedback); blocks holding NaN or Inf leave their residual unchanged.
size_t sign_encoded_bytes(size_t count, uint32_t block_elems);
CodecStatus sign_encode_with_feedback(const float *g, float *residual, size_t count,
                                      uint32_t block_elems, void *out);
CodecStatus sign_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                        void *dst, DType t);
CodecStatus sign_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                   uint32_t block_elems, float *acc);

// MXFP8 (OCP microscaling): E4M3 elements in blocks of 32 sharing a
// power-of-two scale, 8.25 bits per element (codec_format.h). Same
// contract as q8; the block size is fixed by the format.
size_t mxfp8_encoded_bytes(size_t count);
CodecStatus mxfp8_encode(const void *src, DType t, size_t count, void *out);
CodecStatus mxfp8_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t);
CodecStatus mxfp8_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc);

// ---------------------------------------------------------------------------
// Every codec in one shape, for the library's wire registry
// (lib/base/wires.cpp), which finds a wire's kernels by its name: what a
// kernel takes besides the buffers, and the host entry points.

struct CodecParams {
  uint32_t block = 0;         // elements per block (codecs with blocks)
  float prescale = 1;         // casts: the input is multiplied by it before the cast
  float *residual = nullptr;  // error feedback: float32, indexed like the input
};

struct HostCodecKernels {
  const char *wire;  // the registry's name of the wire format
  size_t (*encoded_bytes)(size_t count, uint32_t block_elems);
  CodecStatus (*encode)(const CodecParams &p, const void *src, DType t, size_t count, void *out);
  CodecStatus (*decode)(const CodecParams &p, const void *in, size_t in_bytes, size_t count,
                        void *dst, DType t);
  CodecStatus (*decode_accumulate)(const CodecParams &p, const void *in, size_t in_bytes,
                                   size_t count, float *acc);
};

// The host kernels of the wire named `wire`; nullptr when none has that name.
const HostCodecKernels *find_host_kernels(const char *wire);

}  // namespace bagua::codec

#endif
