// q8 min-max codec: sizes, error bound, non-finite blocks, header checks and
// bit-identity of the AVX2 path with the portable reference.
#include <catch2/catch.hpp>

#include "helpers.h"

using namespace codec_test;
namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;

namespace {

Bytes encode(Isa isa, const void *src, DType t, size_t count, uint32_t block) {
  Bytes out(codec::q8_encoded_bytes(count, block));
  REQUIRE(cpu::q8_encode(isa, src, t, count, block, out.data()) == CodecStatus::ok);
  return out;
}

std::vector<float> decode(Isa isa, const Bytes &in, size_t count, uint32_t block) {
  std::vector<float> out(count);
  REQUIRE(cpu::q8_decode(isa, in.data(), in.size(), count, block, out.data(), DType::f32) ==
          CodecStatus::ok);
  return out;
}

// Max error of each element: half a step of its block plus float rounding.
void check_bound(const std::vector<float> &x, const std::vector<float> &y, uint32_t block) {
  for (size_t first = 0; first < x.size(); first += block) {
    const size_t last = std::min(x.size(), first + block);
    const auto [lo, hi] = std::minmax_element(x.begin() + first, x.begin() + last);
    const double range = double(*hi) - double(*lo);
    const double tol = range / 510 + range * 0x1p-22 + ulp(std::max(fabsf(*lo), fabsf(*hi))) +
                       std::numeric_limits<float>::denorm_min();
    for (size_t i = first; i < last; ++i) {
      INFO("i=" << i << " x=" << x[i] << " y=" << y[i] << " range=" << range);
      REQUIRE(fabs(double(x[i]) - double(y[i])) <= tol);
    }
  }
}

TEST_CASE("q8 encoded size is a pure function of count and block", "[q8]") {
  for (uint32_t block : {64u, 256u, 2048u}) {
    for (size_t count : {0, 1, 15, 63, 64, 65, 2047, 2048, 2049, 10000}) {
      size_t expected = 0;
      for (size_t first = 0; first < count; first += block) {
        expected += 16 + (std::min<size_t>(block, count - first) + 15) / 16 * 16;
      }
      REQUIRE(codec::q8_encoded_bytes(count, block) == expected);
      // The encoder writes exactly that many bytes: the canary after them survives.
      const auto x = normal(count, 1);
      Bytes out(expected + 32, 0xab);
      REQUIRE(codec::q8_encode(x.data(), DType::f32, count, block, out.data()) == CodecStatus::ok);
      REQUIRE(std::all_of(out.begin() + expected, out.end(), [](uint8_t b) { return b == 0xab; }));
    }
  }
}

TEST_CASE("q8 rejects bad block sizes and dtypes", "[q8]") {
  const float x[4] = {1, 2, 3, 4};
  uint8_t out[64];
  for (uint32_t block : {0u, 1u, 32u, 100u, 3000u, 1u << 21}) {
    REQUIRE_FALSE(codec::block_size_valid(block));
    REQUIRE(codec::q8_encoded_bytes(4, block) == 0);
    REQUIRE(codec::q8_encode(x, DType::f32, 4, block, out) == CodecStatus::bad_argument);
  }
  REQUIRE(codec::block_size_valid(codec::kDefaultQ8Block));
  REQUIRE(codec::q8_encode(x, DType::f64, 4, 64, out) == CodecStatus::bad_argument);
  REQUIRE(codec::q8_encode(nullptr, DType::f32, 4, 64, out) == CodecStatus::bad_argument);
}

// Inputs for the error-bound test, by name.
std::vector<float> bound_input(const std::string &kind, size_t n) {
  const auto base = normal(n, 7);
  if (kind == "offset") return normal(n, 8, 1000.0f, 0.01f);
  if (kind == "constant") return std::vector<float>(n, 3.25f);
  if (kind == "tiny") return scaled_copy(base, 1e-30f);
  if (kind == "denormal") return scaled_copy(base, 1e-41f);
  if (kind == "huge") {  // every 64-element block's range overflows float
    auto x = scaled_copy(base, 1e37f);
    for (size_t i = 0; i + 1 < n; i += 64) {
      x[i] = 3e38f;
      x[i + 1] = -3e38f;
    }
    return x;
  }
  if (kind == "signed zeros") {
    std::vector<float> x(n, 0.0f);
    for (size_t i = 0; i < n; i += 3) x[i] = -0.0f;
    return x;
  }
  auto x = base;
  if (kind == "extremes") {
    x[5] = std::numeric_limits<float>::max();
    x[9] = -std::numeric_limits<float>::max();
    x[2000] = std::numeric_limits<float>::denorm_min();
  }
  return x;
}

}  // namespace

TEST_CASE("q8 error is at most half a step of the block", "[q8]") {
  const std::string kind = GENERATE("normal", "offset", "constant", "tiny", "denormal", "huge",
                                    "extremes", "signed zeros");
  const size_t n = 3 * 1024 + 77;
  const auto x = bound_input(kind, n);
  for (Isa isa : isas()) {
    for (uint32_t block : {64u, 1024u, 4096u}) {
      INFO(kind << " " << cpu::isa_name(isa) << " block " << block);
      const auto y = decode(isa, encode(isa, x.data(), DType::f32, n, block), n, block);
      check_bound(x, y, block);
    }
  }
}

TEST_CASE("q8 constant blocks decode exactly", "[q8]") {
  const std::vector<float> x(1000, -7.125f);
  for (Isa isa : isas()) {
    const auto y = decode(isa, encode(isa, x.data(), DType::f32, x.size(), 256), x.size(), 256);
    REQUIRE(same_bits(x, y));
  }
}

TEST_CASE("q8 non-finite values make their whole block NaN", "[q8]") {
  const uint32_t block = 256;
  auto x = normal(6 * block, 3);
  x[block + 17] = NAN;
  x[3 * block + 255] = INFINITY;
  x[4 * block] = -INFINITY;
  const auto is_bad = [&](size_t i) { return i / block == 1 || i / block == 3 || i / block == 4; };
  for (Isa isa : isas()) {
    const Bytes enc = encode(isa, x.data(), DType::f32, x.size(), block);
    const auto y = decode(isa, enc, x.size(), block);
    std::vector<float> acc(x.size(), 1.0f);
    REQUIRE(cpu::q8_decode_accumulate(isa, enc.data(), enc.size(), x.size(), block, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("i=" << i);
      REQUIRE(std::isnan(y[i]) == is_bad(i));
      REQUIRE(std::isnan(acc[i]) == is_bad(i));
    }
  }
}

TEST_CASE("q8 decode_accumulate adds exactly the decoded values", "[q8]") {
  const auto x = normal(5000, 11);
  const auto acc0 = normal(5000, 12);
  for (Isa isa : isas()) {
    const Bytes enc = encode(isa, x.data(), DType::f32, x.size(), 1024);
    const auto y = decode(isa, enc, x.size(), 1024);
    auto acc = acc0;
    REQUIRE(cpu::q8_decode_accumulate(isa, enc.data(), enc.size(), x.size(), 1024, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(acc[i] == acc0[i] + y[i]);
  }
}

TEST_CASE("q8 float16 and bfloat16 inputs and outputs", "[q8]") {
  const auto t = GENERATE(DType::f16, DType::bf16);
  const auto h = to_half(normal(4000, 5), t);
  const auto x = from_half(h, t);
  for (Isa isa : isas()) {
    const Bytes enc = encode(isa, h.data(), t, h.size(), 512);
    REQUIRE(enc == encode(isa, x.data(), DType::f32, x.size(), 512));
    const auto y = decode(isa, enc, x.size(), 512);
    check_bound(x, y, 512);
    std::vector<uint16_t> yh(h.size());
    REQUIRE(cpu::q8_decode(isa, enc.data(), enc.size(), h.size(), 512, yh.data(), t) ==
            CodecStatus::ok);
    REQUIRE(yh == to_half(y, t));
  }
}

TEST_CASE("q8 decoders reject corrupt headers and wrong lengths", "[q8]") {
  const uint32_t block = 128;
  const size_t n = 3 * block + 5;
  const auto x = normal(n, 9);
  const Bytes good = encode(Isa::scalar, x.data(), DType::f32, n, block);
  const size_t last = 3 * (16 + block);  // header of the short last block
  const auto corrupt = [&](size_t at, auto mutate) {
    Bytes bad = good;
    codec::Q8BlockHeader h;
    memcpy(&h, bad.data() + at, sizeof h);
    mutate(h);
    memcpy(bad.data() + at, &h, sizeof h);
    return bad;
  };
  std::vector<Bytes> bad = {
      corrupt(0, [](auto &h) { h.tag = 0; }),
      corrupt(0, [](auto &h) { h.flags = 0x80; }),
      corrupt(0, [](auto &h) { h.reserved = 1; }),
      corrupt(0, [](auto &h) { h.elems = 64; }),
      corrupt(last, [](auto &h) { h.elems = 128; }),
      corrupt(last, [](auto &h) { std::swap(h.min, h.max); }),
      corrupt(last, [](auto &h) { h.max = INFINITY; }),
      corrupt(last, [](auto &h) { h.min = NAN; }),
      corrupt(last, [](auto &h) { h.flags = codec::kFlagNonFinite; }),
  };
  for (Isa isa : isas()) {
    for (const Bytes &b : bad) {
      std::vector<float> y(n, 42.0f);
      REQUIRE(cpu::q8_decode(isa, b.data(), b.size(), n, block, y.data(), DType::f32) ==
              CodecStatus::corrupt_header);
      REQUIRE(cpu::q8_decode_accumulate(isa, b.data(), b.size(), n, block, y.data()) ==
              CodecStatus::corrupt_header);
      REQUIRE(std::all_of(y.begin(), y.end(), [](float v) { return v == 42.0f; }));
    }
    std::vector<float> y(n);
    REQUIRE(cpu::q8_decode(isa, good.data(), good.size() - 1, n, block, y.data(), DType::f32) ==
            CodecStatus::truncated);
    REQUIRE(cpu::q8_decode(isa, good.data(), good.size() + 1, n, block, y.data(), DType::f32) ==
            CodecStatus::bad_argument);
    REQUIRE(cpu::q8_decode(isa, good.data(), good.size(), n, 256, y.data(), DType::f32) !=
            CodecStatus::ok);
    REQUIRE(cpu::q8_decode(isa, good.data(), good.size(), n, block, y.data(), DType::f64) ==
            CodecStatus::bad_argument);
  }
  REQUIRE(std::string(codec::codec_status_name(CodecStatus::truncated)) == "truncated");
}

TEST_CASE("q8 AVX2 path is bit-identical to the scalar reference", "[q8][simd]") {
  if (!cpu::isa_supported(Isa::avx2)) {
    WARN("no AVX2 on this CPU: skipped");
    return;
  }
  const uint32_t block = GENERATE(64u, 2048u);
  const size_t n = 5 * block + 37;
  auto x = normal(n, 21);
  x[block + 3] = NAN;                                             // non-finite block
  for (size_t i = 2 * block; i < 3 * block; ++i) x[i] *= 1e38f;   // wide (overflowing) block
  for (size_t i = 3 * block; i < 4 * block; ++i) x[i] *= 1e-35f;  // wide (tiny) block
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    INFO("dtype " << bagua::dtype_name(t) << " block " << block);
    const auto h = to_half(x, t);
    const void *src = t == DType::f32 ? static_cast<const void *>(x.data()) : h.data();
    const Bytes ref = encode(Isa::scalar, src, t, n, block);
    REQUIRE(ref == encode(Isa::avx2, src, t, n, block));
    Bytes a(n * bagua::dtype_size(t)), b(a.size());
    REQUIRE(cpu::q8_decode(Isa::scalar, ref.data(), ref.size(), n, block, a.data(), t) ==
            CodecStatus::ok);
    REQUIRE(cpu::q8_decode(Isa::avx2, ref.data(), ref.size(), n, block, b.data(), t) ==
            CodecStatus::ok);
    REQUIRE(a == b);
  }
  const Bytes enc = encode(Isa::scalar, x.data(), DType::f32, n, block);
  auto acc_a = normal(n, 22), acc_b = acc_a;
  REQUIRE(cpu::q8_decode_accumulate(Isa::scalar, enc.data(), enc.size(), n, block, acc_a.data()) ==
          CodecStatus::ok);
  REQUIRE(cpu::q8_decode_accumulate(Isa::avx2, enc.data(), enc.size(), n, block, acc_b.data()) ==
          CodecStatus::ok);
  REQUIRE(same_bits(acc_a, acc_b));
}
