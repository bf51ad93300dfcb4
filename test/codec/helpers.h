// Test data generators and helpers shared by the codec tests.
#ifndef BAGUA_TEST_CODEC_HELPERS_H
#define BAGUA_TEST_CODEC_HELPERS_H

#include <math.h>
#include <string.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "codec.h"
#include "cpu/codec_cpu.h"
#include "lib/base/dtype.hpp"

namespace codec_test {

using bagua::DType;
using bagua::codec::CodecStatus;
using bagua::codec::cpu::Isa;
using Bytes = std::vector<uint8_t>;

inline std::vector<float> normal(size_t n, uint32_t seed, float mean = 0.0f, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, sigma);
  std::vector<float> v(n);
  for (float &x : v) x = dist(rng);
  return v;
}

// Arbitrary 32-bit patterns: every float class, NaN payloads included.
inline std::vector<float> random_bits(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float &x : v) x = bagua::bits_float(rng());
  return v;
}

inline std::vector<uint16_t> random_u16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v) x = uint16_t(rng());
  return v;
}

inline std::vector<uint16_t> to_half(const std::vector<float> &v, DType t) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i] = t == DType::f16 ? bagua::float_to_fp16(v[i]) : bagua::float_to_bf16(v[i]);
  }
  return h;
}

inline std::vector<float> from_half(const std::vector<uint16_t> &h, DType t) {
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    v[i] = t == DType::f16 ? bagua::fp16_to_float(h[i]) : bagua::bf16_to_float(h[i]);
  }
  return v;
}

inline std::vector<float> scaled_copy(std::vector<float> v, float s) {
  for (float &x : v) x *= s;
  return v;
}

inline float ulp(float x) {
  const float a = fabsf(x);
  return std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
}

inline bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Accumulator entries for the overflow tests: large finite values of both
// signs (whose sums with +-0.75 FLT_MAX overflow), +-Inf, NaN and 1.
inline std::vector<float> overflow_accumulator(size_t n) {
  const float big = 0.75f * std::numeric_limits<float>::max();
  const float kinds[] = {big, -big, INFINITY, -INFINITY, NAN, 1.0f};
  std::vector<float> acc(n);
  for (size_t i = 0; i < n; ++i) acc[i] = kinds[i % 6];
  return acc;
}

// The expected acc + v for a finite v: in double, clamped to +-FLT_MAX when
// acc is finite (a finite overflow saturates), the float sum otherwise.
inline float saturated_sum(float acc, float v) {
  const double m = std::numeric_limits<float>::max();
  if (!std::isfinite(acc)) return acc + v;
  return float(std::clamp(double(acc) + double(v), -m, m));
}

inline bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// NaNs that arithmetic would pass through with their sign and payload on
// x86 (the GPU would return its own): the codecs must write the canonical
// NaN instead, so that CPU and CUDA outputs agree bit for bit.
inline std::vector<float> odd_nans(size_t n) {
  const uint32_t kinds[] = {0xffc00000u, 0x7fc12345u, 0xffe00001u, 0x7fbfffffu};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = kinds[i % 4];
    memcpy(&v[i], &bits, sizeof bits);
  }
  return v;
}

// Every other element of `base` replaced by an odd NaN.
inline std::vector<float> with_odd_nans(std::vector<float> base) {
  const auto nans = odd_nans(base.size());
  for (size_t i = 0; i < base.size(); i += 2) base[i] = nans[i];
  return base;
}

// The bits of every NaN in v are the canonical NaN's (0x7fc00000).
inline bool nans_canonical(const std::vector<float> &v) {
  for (float f : v) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if (std::isnan(f) && bits != 0x7fc00000u) return false;
  }
  return true;
}

inline std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::scalar};
  if (bagua::codec::cpu::isa_supported(Isa::avx2)) v.push_back(Isa::avx2);
  return v;
}

}  // namespace codec_test

#endif
