// 1-bit sign codec: sizes, scale, error feedback, non-finite blocks, header
// checks and bit-identity of the AVX2 path with the portable reference.
#include <catch2/catch.hpp>

#include "helpers.h"

using namespace codec_test;
namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;

namespace {

Bytes encode(Isa isa, const std::vector<float> &g, float *residual, uint32_t block) {
  Bytes out(codec::sign_encoded_bytes(g.size(), block));
  REQUIRE(cpu::sign_encode_with_feedback(isa, g.data(), residual, g.size(), block, out.data()) ==
          CodecStatus::ok);
  return out;
}

std::vector<float> decode(Isa isa, const Bytes &in, size_t count, uint32_t block) {
  std::vector<float> out(count);
  REQUIRE(cpu::sign_decode(isa, in.data(), in.size(), count, block, out.data(), DType::f32) ==
          CodecStatus::ok);
  return out;
}

}  // namespace

TEST_CASE("sign encoded size", "[sign]") {
  for (uint32_t block : {64u, 2048u}) {
    for (size_t count : {0, 1, 63, 64, 65, 2049, 5000}) {
      size_t expected = 0;
      for (size_t first = 0; first < count; first += block) {
        expected += 8 + (std::min<size_t>(block, count - first) + 63) / 64 * 8;
      }
      REQUIRE(codec::sign_encoded_bytes(count, block) == expected);
      const auto g = normal(count, 1);
      Bytes out(expected + 16, 0xab);
      REQUIRE(codec::sign_encode_with_feedback(g.data(), nullptr, count, block, out.data()) ==
              CodecStatus::ok);
      REQUIRE(std::all_of(out.begin() + expected, out.end(), [](uint8_t b) { return b == 0xab; }));
    }
  }
}

TEST_CASE("sign decodes to +-mean|x| of the block", "[sign]") {
  const uint32_t block = 256;
  auto g = normal(3 * block + 10, 2);
  g[0] = -0.0f;
  for (Isa isa : isas()) {
    const auto y = decode(isa, encode(isa, g, nullptr, block), g.size(), block);
    for (size_t first = 0; first < g.size(); first += block) {
      const size_t last = std::min(g.size(), first + block);
      double sum = 0;
      for (size_t i = first; i < last; ++i) sum += fabs(g[i]);
      const float scale = float(sum / double(last - first));
      for (size_t i = first; i < last; ++i) {
        REQUIRE(fabsf(y[i]) == Approx(scale).epsilon(1e-6));
        REQUIRE(std::signbit(y[i]) == std::signbit(g[i]));
      }
    }
  }
}

TEST_CASE("sign error feedback conserves the sum of the inputs", "[sign]") {
  const size_t n = 4096 + 33;
  const uint32_t block = 512;
  for (Isa isa : isas()) {
    std::vector<float> residual(n, 0.0f);
    std::vector<double> sent(n, 0.0), given(n, 0.0);
    // Each step: sum of decoded outputs plus final residual == sum of inputs.
    for (uint32_t step = 0; step < 20; ++step) {
      const auto g = normal(n, 100 + step);
      const auto y = decode(isa, encode(isa, g, residual.data(), block), n, block);
      for (size_t i = 0; i < n; ++i) {
        sent[i] += y[i];
        given[i] += g[i];
      }
    }
    for (size_t i = 0; i < n; ++i) REQUIRE(sent[i] + residual[i] == Approx(given[i]).margin(1e-4));
  }
}

TEST_CASE("sign non-finite blocks decode to NaN and keep their residual", "[sign]") {
  const uint32_t block = 64;
  auto g = normal(4 * block, 3);
  g[block + 5] = NAN;
  g[3 * block] = INFINITY;
  for (Isa isa : isas()) {
    const std::vector<float> r0(g.size(), 0.5f);
    auto residual = r0;
    const Bytes enc = encode(isa, g, residual.data(), block);
    const auto y = decode(isa, enc, g.size(), block);
    std::vector<float> acc(g.size(), 1.0f);
    REQUIRE(cpu::sign_decode_accumulate(isa, enc.data(), enc.size(), g.size(), block, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < g.size(); ++i) {
      const bool bad = i / block == 1 || i / block == 3;
      REQUIRE(std::isnan(y[i]) == bad);
      REQUIRE(std::isnan(acc[i]) == bad);
      if (bad) REQUIRE(residual[i] == r0[i]);
      if (!bad) REQUIRE(acc[i] == 1.0f + y[i]);
    }
  }
}

TEST_CASE("sign finite overflow saturates instead of raising the NaN flag", "[sign]") {
  // Blocks of +-0.75 FLT_MAX: their scale is 0.75 FLT_MAX exactly, so each
  // decoded value is +-0.75 FLT_MAX.
  const uint32_t block = 64;
  const float max = std::numeric_limits<float>::max(), big = 0.75f * max;
  std::vector<float> g(3 * block + 7);
  for (size_t i = 0; i < g.size(); ++i) g[i] = i % 3 ? big : -big;
  const auto acc0 = overflow_accumulator(g.size());
  for (Isa isa : isas()) {
    INFO(cpu::isa_name(isa));
    {  // decode_accumulate into the overflow accumulator
      const Bytes enc = encode(isa, g, nullptr, block);
      auto acc = acc0;
      REQUIRE(cpu::sign_decode_accumulate(isa, enc.data(), enc.size(), g.size(), block,
                                          acc.data()) == CodecStatus::ok);
      for (size_t i = 0; i < g.size(); ++i) {
        INFO("i=" << i << " acc0=" << acc0[i] << " g=" << g[i] << " acc=" << acc[i]);
        REQUIRE(same_value(acc[i], saturated_sum(acc0[i], g[i])));
      }
    }
    {  // g + residual = +-1.5 FLT_MAX saturates: no flag, scale FLT_MAX, residual 0
      auto residual = g;
      const Bytes enc = encode(isa, g, residual.data(), block);
      for (size_t b = 0; b * block < g.size(); ++b) {
        REQUIRE(enc[b * codec::sign_block_bytes(block) + 5] == 0);  // flags
      }
      const auto y = decode(isa, enc, g.size(), block);
      for (size_t i = 0; i < g.size(); ++i) {
        INFO("i=" << i);
        REQUIRE(y[i] == (g[i] > 0 ? max : -max));
        REQUIRE(residual[i] == 0.0f);
      }
    }
  }
}

TEST_CASE("sign decode_accumulate writes the canonical NaN", "[sign]") {
  // Small values take the plain sum, values near FLT_MAX the saturating one.
  const float scale = GENERATE(1.0f, 0.75f * std::numeric_limits<float>::max());
  const uint32_t block = 64;
  const auto g = scaled_copy(normal(3 * block + 7, 8), scale > 1.0f ? 1.0f : scale);
  std::vector<float> x(g.size());
  for (size_t i = 0; i < g.size(); ++i) x[i] = g[i] < 0 ? -scale : scale;
  const auto acc0 = with_odd_nans(normal(g.size(), 9));
  for (Isa isa : isas()) {
    INFO(cpu::isa_name(isa) << " scale " << scale);
    const Bytes enc = encode(isa, x, nullptr, block);
    auto acc = acc0;
    REQUIRE(cpu::sign_decode_accumulate(isa, enc.data(), enc.size(), g.size(), block, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < g.size(); i += 2) REQUIRE(std::isnan(acc[i]));
    REQUIRE(nans_canonical(acc));
  }
}

TEST_CASE("sign decoders reject corrupt headers and wrong lengths", "[sign]") {
  const uint32_t block = 64;
  const auto g = normal(3 * block + 1, 4);
  const Bytes good = encode(Isa::scalar, g, nullptr, block);
  const auto corrupt = [&](size_t at, auto mutate) {
    Bytes bad = good;
    codec::SignBlockHeader h;
    memcpy(&h, bad.data() + at, sizeof h);
    mutate(h);
    memcpy(bad.data() + at, &h, sizeof h);
    return bad;
  };
  const size_t last = 3 * (8 + block / 8);
  const std::vector<Bytes> bad = {
      corrupt(0, [](auto &h) { h.tag = 0; }),
      corrupt(0, [](auto &h) { h.flags = 2; }),
      corrupt(0, [](auto &h) { h.reserved = 1; }),
      corrupt(last, [](auto &h) { h.scale = -1.0f; }),
      corrupt(last, [](auto &h) { h.scale = INFINITY; }),
      corrupt(last, [](auto &h) { h.flags = codec::kFlagNonFinite; }),
  };
  for (Isa isa : isas()) {
    for (const Bytes &b : bad) {
      std::vector<float> y(g.size(), 42.0f);
      REQUIRE(cpu::sign_decode(isa, b.data(), b.size(), g.size(), block, y.data(), DType::f32) ==
              CodecStatus::corrupt_header);
      REQUIRE(cpu::sign_decode_accumulate(isa, b.data(), b.size(), g.size(), block, y.data()) ==
              CodecStatus::corrupt_header);
      REQUIRE(std::all_of(y.begin(), y.end(), [](float v) { return v == 42.0f; }));
    }
    std::vector<float> y(g.size());
    REQUIRE(cpu::sign_decode(isa, good.data(), good.size() - 1, g.size(), block, y.data(),
                             DType::f32) == CodecStatus::truncated);
    REQUIRE(cpu::sign_decode(isa, good.data(), good.size(), g.size(), 100, y.data(), DType::f32) ==
            CodecStatus::bad_argument);
  }
}

TEST_CASE("sign AVX2 path is bit-identical to the scalar reference", "[sign][simd]") {
  if (!cpu::isa_supported(Isa::avx2)) {
    WARN("no AVX2 on this CPU: skipped");
    return;
  }
  const uint32_t block = GENERATE(64u, 2048u);
  const size_t n = 4 * block + 45;
  auto g = normal(n, 5);
  g[2 * block + 1] = NAN;
  auto ra = normal(n, 6);
  // Block 0: g + residual overflows in some lanes (saturated), not in others.
  const float big = 0.75f * std::numeric_limits<float>::max();
  for (size_t i = 0; i < block; ++i) {
    g[i] = i % 2 ? big : -big;
    ra[i] = i % 3 ? big : -big;
  }
  auto rb = ra;
  const Bytes ref = encode(Isa::scalar, g, ra.data(), block);
  REQUIRE(ref == encode(Isa::avx2, g, rb.data(), block));
  REQUIRE(same_bits(ra, rb));
  REQUIRE(encode(Isa::scalar, g, nullptr, block) == encode(Isa::avx2, g, nullptr, block));
  for (DType t : {DType::f16, DType::bf16}) {
    std::vector<uint16_t> a(n), b(n);
    REQUIRE(cpu::sign_decode(Isa::scalar, ref.data(), ref.size(), n, block, a.data(), t) ==
            CodecStatus::ok);
    REQUIRE(cpu::sign_decode(Isa::avx2, ref.data(), ref.size(), n, block, b.data(), t) ==
            CodecStatus::ok);
    REQUIRE(a == b);
  }
  REQUIRE(same_bits(decode(Isa::scalar, ref, n, block), decode(Isa::avx2, ref, n, block)));
  auto acc_a = normal(n, 7);
  // Large, infinite and NaN accumulator entries over the +-0.75 FLT_MAX block
  // (the saturating vector sum) and a normal one (the plain sum).
  const auto extremes = overflow_accumulator(block);
  for (size_t b : {0, 1}) std::copy(extremes.begin(), extremes.end(), acc_a.begin() + b * block);
  auto acc_b = acc_a;
  REQUIRE(cpu::sign_decode_accumulate(Isa::scalar, ref.data(), ref.size(), n, block,
                                      acc_a.data()) == CodecStatus::ok);
  REQUIRE(cpu::sign_decode_accumulate(Isa::avx2, ref.data(), ref.size(), n, block, acc_b.data()) ==
          CodecStatus::ok);
  REQUIRE(same_bits(acc_a, acc_b));
}
