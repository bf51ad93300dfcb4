// float16 / bfloat16 <-> float32 conversions shared by CPU and CUDA code.
// Bit-exact, round to nearest even, NaN stays NaN. Storage types are plain
// uint16_t so the same wire bytes mean the same thing on host and device.
#ifndef BAGUA_KERNELS_HALF_H
#define BAGUA_KERNELS_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define BAGUA_HD __host__ __device__ __forceinline__
#else
#define BAGUA_HD inline
#endif

namespace bagua {

BAGUA_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

BAGUA_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

BAGUA_HD float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

BAGUA_HD uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                          // round to nearest even
  return uint16_t(u >> 16);
}

BAGUA_HD float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  // Zero or subnormal: value = mant * 2^-24, exact in float32.
  const float mag = float(mant) * 5.9604644775390625e-8f;
  return sign ? -mag : mag;
}

BAGUA_HD uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                                 // normal fp16 range
    const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
    return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
  }
  // Subnormal or zero: add 0.5 (2^-1) so the FPU rounds the mantissa to the
  // 2^-24 grid with round-to-nearest-even, then take the low bits.
  const float shifted = bits_float(abs) + 0.5f;
  return uint16_t(sign | (float_bits(shifted) - 0x3f000000u));
}

}  // namespace bagua

#endif
