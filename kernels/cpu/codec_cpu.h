// CPU codec entry points with an explicit instruction set, for the public
// wrappers in codec.h (which pass best_isa()) and for tests that compare the
// AVX2 path with the portable reference bit for bit.
#ifndef BAGUA_KERNELS_CPU_CODEC_CPU_H
#define BAGUA_KERNELS_CPU_CODEC_CPU_H

#include "codec.h"

namespace bagua::codec::cpu {

enum class Isa : uint8_t { scalar, avx2 };

bool isa_supported(Isa isa);
Isa best_isa();  // avx2 when the CPU has AVX2, FMA and F16C
const char *isa_name(Isa isa);

CodecStatus q8_encode(Isa isa, const void *src, DType t, size_t count, uint32_t block_elems,
                      void *out);
CodecStatus q8_decode(Isa isa, const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t);
CodecStatus q8_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc);

CodecStatus q4_encode(Isa isa, const void *src, DType t, size_t count, uint32_t block_elems,
                      void *out);
CodecStatus q4_decode(Isa isa, const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t);
CodecStatus q4_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc);

CodecStatus cast_encode(Isa isa, const void *src, DType t, size_t count, CastFormat format,
                        float prescale, void *out);
CodecStatus cast_decode(Isa isa, const void *in, size_t in_bytes, size_t count, void *dst, DType t);
CodecStatus cast_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                   float *acc);

CodecStatus sign_encode_with_feedback(Isa isa, const float *g, float *residual, size_t count,
                                      uint32_t block_elems, void *out);
CodecStatus sign_decode(Isa isa, const void *in, size_t in_bytes, size_t count,
                        uint32_t block_elems, void *dst, DType t);
CodecStatus sign_decode_accumulate(Isa isa, const void *in, size_t in_bytes, size_t count,
                                   uint32_t block_elems, float *acc);

// Checks the arguments every decoder shares: pointers and the exact length.
CodecStatus check_decode_args(const void *in, size_t in_bytes, size_t expected_bytes, size_t count,
                              const void *dst);

}  // namespace bagua::codec::cpu

#endif
