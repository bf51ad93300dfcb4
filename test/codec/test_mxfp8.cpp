// MXFP8 codec: sizes, the E4M3 grid and scale rule checked against a
// brute-force reference, non-finite blocks, half inputs, accumulation and
// header checks.
#include <catch2/catch.hpp>
#include <cmath>

#include "helpers.h"

using namespace codec_test;
namespace codec = bagua::codec;

namespace {

constexpr size_t kBlock = codec::kMxBlockElems;

Bytes encode(const void *src, DType t, size_t count) {
  Bytes out(codec::mxfp8_encoded_bytes(count));
  REQUIRE(codec::mxfp8_encode(src, t, count, out.data()) == CodecStatus::ok);
  return out;
}

std::vector<float> decode(const Bytes &in, size_t count) {
  std::vector<float> out(count);
  REQUIRE(codec::mxfp8_decode(in.data(), in.size(), count, out.data(), DType::f32) ==
          CodecStatus::ok);
  return out;
}

// The non-negative finite E4M3 values from the OCP definition: exponent
// field e (bias 7), mantissa m; e = 0 is subnormal, (15, 7) is NaN.
std::vector<double> e4m3_grid() {
  std::vector<double> grid;
  for (int e = 0; e < 16; ++e)
    for (int m = 0; m < 8; ++m) {
      if (e == 15 && m == 7) continue;
      grid.push_back(e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7));
    }
  return grid;
}

// x / 2^shared rounded to the nearest grid value (ties to the even code),
// saturated at 448, times 2^shared: what the format says an element decodes to.
double reference_element(float x, int shared) {
  static const std::vector<double> grid = e4m3_grid();
  const double v = std::fabs(std::ldexp(double(x), -shared));
  size_t best = 0;
  for (size_t k = 1; k < grid.size(); ++k) {
    const double d = std::fabs(grid[k] - v), b = std::fabs(grid[best] - v);
    if (d < b || (d == b && k % 2 == 0)) best = k;
  }
  return std::copysign(std::ldexp(grid[best], shared), double(x));
}

double block_max(const float *x, size_t n) {
  double amax = 0;
  for (size_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(double(x[i])));
  return amax;
}

// The smallest shared exponent, at least -127, with max |x| / 2^e <= 448.
int reference_shared(const float *x, size_t n) {
  const double amax = block_max(x, n);
  if (amax == 0) return -127;
  int e = int(std::floor(std::log2(amax))) - 8;
  if (amax > std::ldexp(448.0, e)) ++e;
  return std::max(-127, e);
}

}  // namespace

TEST_CASE("mxfp8 encoded size: a header, a scale per 32 and a byte per element", "[mxfp8]") {
  for (size_t count : {0, 1, 31, 32, 33, 512, 1000}) {
    const size_t blocks = (count + 31) / 32;
    const size_t expected = 16 + (blocks + 15) / 16 * 16 + (count + 15) / 16 * 16;
    REQUIRE(codec::mxfp8_encoded_bytes(count) == expected);
    const auto x = normal(count, 1);
    Bytes out(expected + 16, 0xab);
    REQUIRE(codec::mxfp8_encode(x.data(), DType::f32, count, out.data()) == CodecStatus::ok);
    REQUIRE(std::all_of(out.begin() + expected, out.end(), [](uint8_t b) { return b == 0xab; }));
  }
}

TEST_CASE("mxfp8 elements are the nearest E4M3 value at the block's scale", "[mxfp8]") {
  // Gaussian blocks, blocks spanning many binades, tiny and huge magnitudes.
  std::vector<float> x = normal(64 * kBlock + 7, 2);
  std::mt19937 rng(3);
  for (size_t i = 0; i < 16 * kBlock; ++i)
    x.push_back(std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(i % 60) - 30));
  for (float scale : {1e-38f, 1e-30f, 1e30f, 3e38f})
    for (size_t i = 0; i < kBlock; ++i)
      x.push_back(scale * std::uniform_real_distribution<float>(-1, 1)(rng));
  const auto y = decode(encode(x.data(), DType::f32, x.size()), x.size());
  for (size_t first = 0; first < x.size(); first += kBlock) {
    const size_t n = std::min(kBlock, x.size() - first);
    const int shared = reference_shared(&x[first], n);
    for (size_t i = first; i < first + n; ++i) {
      INFO("element " << i << " x " << x[i] << " shared " << shared);
      REQUIRE(double(y[i]) == reference_element(x[i], shared));
    }
  }
}

TEST_CASE("mxfp8 errors: 1/16 of an element, or E4M3's subnormal step", "[mxfp8]") {
  // No element saturates: the error of each is at most half its E4M3 step
  // (1/16 of it in the normal range, 2^(scale - 10) below); zero blocks stay zero.
  const auto x = normal(4096, 4, 0.0f, 1e-3f);
  const auto y = decode(encode(x.data(), DType::f32, x.size()), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double step = std::ldexp(1.0, reference_shared(&x[i / kBlock * kBlock], kBlock) - 10);
    REQUIRE(std::fabs(double(y[i]) - x[i]) <= std::fabs(x[i]) / 16 + step);
  }
  const std::vector<float> zeros(100, 0.0f);
  const auto z = decode(encode(zeros.data(), DType::f32, 100), 100);
  REQUIRE(std::all_of(z.begin(), z.end(), [](float v) { return v == 0.0f; }));
}

TEST_CASE("mxfp8: a non-finite value makes its block NaN, the others stay", "[mxfp8]") {
  auto x = normal(3 * kBlock, 5);
  const float bad = GENERATE(NAN, INFINITY, -INFINITY);
  x[kBlock + 5] = bad;
  const auto y = decode(encode(x.data(), DType::f32, x.size()), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i);
    if (i / kBlock == 1)
      REQUIRE(bagua::float_bits(y[i]) == codec::kCanonicalNanBits);
    else
      REQUIRE(std::isfinite(y[i]));
  }
}

TEST_CASE("mxfp8 encodes half inputs as their float values", "[mxfp8]") {
  const auto x = normal(1000, 6, 0.0f, 10.0f);
  for (DType t : {DType::f16, DType::bf16}) {
    const auto h = to_half(x, t);
    const auto as_float = from_half(h, t);
    REQUIRE(encode(h.data(), t, h.size()) == encode(as_float.data(), DType::f32, h.size()));
    std::vector<uint16_t> out(h.size());
    const Bytes enc = encode(h.data(), t, h.size());
    REQUIRE(codec::mxfp8_decode(enc.data(), enc.size(), h.size(), out.data(), t) ==
            CodecStatus::ok);
    REQUIRE(out == to_half(decode(enc, h.size()), t));
  }
}

TEST_CASE("mxfp8 decode_accumulate adds the decoded values", "[mxfp8]") {
  const auto x = normal(777, 7);
  const Bytes enc = encode(x.data(), DType::f32, x.size());
  const auto y = decode(enc, x.size());
  auto acc = normal(777, 8);
  const auto before = acc;
  REQUIRE(codec::mxfp8_decode_accumulate(enc.data(), enc.size(), x.size(), acc.data()) ==
          CodecStatus::ok);
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(acc[i] == before[i] + y[i]);
}

TEST_CASE("mxfp8 decoders check the header and the length first", "[mxfp8]") {
  const auto x = normal(100, 9);
  Bytes enc = encode(x.data(), DType::f32, x.size());
  std::vector<float> out(100, 7.0f);
  REQUIRE(codec::mxfp8_decode(enc.data(), enc.size() - 1, 100, out.data(), DType::f32) ==
          CodecStatus::truncated);
  REQUIRE(codec::mxfp8_decode(enc.data(), enc.size(), 80, out.data(), DType::f32) ==
          CodecStatus::bad_argument);  // more bytes than 80 elements take
  REQUIRE(codec::mxfp8_decode(enc.data(), enc.size(), 99, out.data(), DType::f32) ==
          CodecStatus::corrupt_header);  // the same length: the header's count differs
  for (size_t byte : {0, 1, 2, 4, 8}) {
    Bytes bad = enc;
    bad[byte] ^= 0x40;
    INFO("header byte " << byte);
    REQUIRE(codec::mxfp8_decode(bad.data(), bad.size(), 100, out.data(), DType::f32) ==
            CodecStatus::corrupt_header);
    REQUIRE(codec::mxfp8_decode_accumulate(bad.data(), bad.size(), 100, out.data()) ==
            CodecStatus::corrupt_header);
  }
  REQUIRE(std::all_of(out.begin(), out.end(), [](float v) { return v == 7.0f; }));
  REQUIRE(codec::mxfp8_decode(enc.data(), enc.size(), 100, out.data(), DType::f64) ==
          CodecStatus::bad_argument);
}

TEST_CASE("mxfp8 decodes any scale and element byte without overflow", "[mxfp8]") {
  // Untrusted bytes: huge scales saturate, the E4M3 NaN code is the canonical NaN.
  Bytes enc = encode(normal(64, 10).data(), DType::f32, 64);
  for (size_t i = 16; i < enc.size(); ++i) enc[i] = uint8_t(i * 37);
  enc[16] = 0xfe;  // 2^127 times up to 448
  std::vector<float> out(64);
  REQUIRE(codec::mxfp8_decode(enc.data(), enc.size(), 64, out.data(), DType::f32) ==
          CodecStatus::ok);
  for (float v : out)
    REQUIRE((std::isfinite(v) || bagua::float_bits(v) == codec::kCanonicalNanBits));
}
