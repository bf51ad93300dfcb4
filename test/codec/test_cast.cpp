// Cast codec: sizes, rounding, prescale, non-finite values, header checks and
// bit-identity of the AVX2 path with the portable reference.
#include <catch2/catch.hpp>

#include "helpers.h"

using namespace codec_test;
namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;
using codec::CastFormat;

namespace {

DType wire_dtype(CastFormat f) { return f == CastFormat::fp16 ? DType::f16 : DType::bf16; }

Bytes encode(Isa isa, const void *src, DType t, size_t count, CastFormat f, float prescale) {
  Bytes out(codec::cast_encoded_bytes(count));
  REQUIRE(cpu::cast_encode(isa, src, t, count, f, prescale, out.data()) == CodecStatus::ok);
  return out;
}

std::vector<float> decode(Isa isa, const Bytes &in, size_t count) {
  std::vector<float> out(count);
  REQUIRE(cpu::cast_decode(isa, in.data(), in.size(), count, out.data(), DType::f32) ==
          CodecStatus::ok);
  return out;
}

}  // namespace

TEST_CASE("cast encoded size", "[cast]") {
  for (size_t count : {0, 1, 7, 8, 9, 1000}) {
    const size_t expected = 16 + (2 * count + 15) / 16 * 16;
    REQUIRE(codec::cast_encoded_bytes(count) == expected);
    const auto x = normal(count, 1);
    Bytes out(expected + 16, 0xab);
    REQUIRE(codec::cast_encode(x.data(), DType::f32, count, CastFormat::fp16, 1.0f, out.data()) ==
            CodecStatus::ok);
    REQUIRE(std::all_of(out.begin() + expected, out.end(), [](uint8_t b) { return b == 0xab; }));
  }
}

TEST_CASE("cast rounds to nearest and undoes the prescale", "[cast]") {
  const auto f = GENERATE(CastFormat::fp16, CastFormat::bf16);
  const float prescale = GENERATE(1.0f, 0.125f, 0.3f);
  const auto x = normal(1001, 2, 0.0f, 100.0f);
  for (Isa isa : isas()) {
    const auto y = decode(isa, encode(isa, x.data(), DType::f32, x.size(), f, prescale), x.size());
    const auto wire = to_half(scaled_copy(x, prescale), wire_dtype(f));
    const auto back = from_half(wire, wire_dtype(f));
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(y[i] == back[i] * (1.0f / prescale));
  }
}

TEST_CASE("cast prescale keeps sums of ranks inside float16", "[cast]") {
  const std::vector<float> x(64, 60000.0f * 4);  // sum of 4 ranks near fp16 max
  for (Isa isa : isas()) {
    const auto plain =
        decode(isa, encode(isa, x.data(), DType::f32, 64, CastFormat::fp16, 1.0f), 64);
    REQUIRE(std::isinf(plain[0]));
    const auto y = decode(isa, encode(isa, x.data(), DType::f32, 64, CastFormat::fp16, 0.25f), 64);
    REQUIRE(y[0] == 240000.0f);
  }
}

TEST_CASE("cast keeps NaN and Inf", "[cast]") {
  const std::vector<float> x = {1.0f, NAN, INFINITY, -INFINITY, 1e30f};
  for (Isa isa : isas()) {
    const auto y = decode(isa, encode(isa, x.data(), DType::f32, 5, CastFormat::fp16, 1.0f), 5);
    REQUIRE(y[0] == 1.0f);
    REQUIRE(std::isnan(y[1]));
    REQUIRE(y[2] == INFINITY);
    REQUIRE(y[3] == -INFINITY);
    REQUIRE(y[4] == INFINITY);  // overflow is visible, never finite garbage
  }
}

TEST_CASE("cast writes every NaN as the canonical one", "[cast]") {
  const auto f = GENERATE(CastFormat::fp16, CastFormat::bf16);
  const size_t n = 101;
  const auto x = with_odd_nans(normal(n, 5));
  const uint16_t wire_nan = f == CastFormat::fp16 ? 0x7e00 : 0x7fc0;
  for (Isa isa : isas()) {
    INFO(cpu::isa_name(isa));
    Bytes enc = encode(isa, x.data(), DType::f32, n, f, 0.5f);
    auto *h = reinterpret_cast<uint16_t *>(enc.data() + 16);
    for (size_t i = 0; i < n; i += 2) REQUIRE(h[i] == wire_nan);
    // NaNs of any sign and payload on the wire (another encoder's) decode
    // to the canonical NaN, as do NaNs in the accumulator.
    const uint16_t odd_wire_nan = f == CastFormat::fp16 ? 0xfc01 : 0xff81;  // -NaN, payload 1
    for (size_t i = 0; i < n; i += 2) h[i] = uint16_t(odd_wire_nan + i % 64);
    const auto y = decode(isa, enc, n);
    for (size_t i = 0; i < n; i += 2) REQUIRE(std::isnan(y[i]));
    REQUIRE(nans_canonical(y));
    auto acc = with_odd_nans(normal(n, 6));
    const Bytes clean = encode(isa, normal(n, 7).data(), DType::f32, n, f, 0.5f);
    REQUIRE(cpu::cast_decode_accumulate(isa, clean.data(), clean.size(), n, acc.data()) ==
            CodecStatus::ok);
    REQUIRE(nans_canonical(acc));
  }
}

TEST_CASE("cast decode_accumulate is one fma per element", "[cast]") {
  const auto x = normal(999, 3);
  const auto acc0 = normal(999, 4);
  for (Isa isa : isas()) {
    const Bytes enc = encode(isa, x.data(), DType::f32, x.size(), CastFormat::bf16, 0.3f);
    auto acc = acc0;
    REQUIRE(cpu::cast_decode_accumulate(isa, enc.data(), enc.size(), x.size(), acc.data()) ==
            CodecStatus::ok);
    const auto wire = from_half(to_half(scaled_copy(x, 0.3f), DType::bf16), DType::bf16);
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(acc[i] == fmaf(wire[i], 1.0f / 0.3f, acc0[i]));
  }
}

TEST_CASE("cast rejects bad arguments and corrupt headers", "[cast]") {
  const auto x = normal(40, 5);
  uint8_t out[256];
  for (float p : {0.0f, -1.0f, NAN, INFINITY, 1e-40f}) {
    REQUIRE(codec::cast_encode(x.data(), DType::f32, 40, CastFormat::fp16, p, out) ==
            CodecStatus::bad_argument);
  }
  REQUIRE(codec::cast_encode(x.data(), DType::f32, 40, CastFormat(3), 1.0f, out) ==
          CodecStatus::bad_argument);
  const Bytes good = encode(Isa::scalar, x.data(), DType::f32, 40, CastFormat::fp16, 1.0f);
  const auto corrupt = [&](auto mutate) {
    Bytes bad = good;
    codec::CastHeader h;
    memcpy(&h, bad.data(), sizeof h);
    mutate(h);
    memcpy(bad.data(), &h, sizeof h);
    return bad;
  };
  const std::vector<Bytes> bad = {
      corrupt([](auto &h) { h.tag = 0; }),        corrupt([](auto &h) { h.format = 0; }),
      corrupt([](auto &h) { h.reserved = 2; }),   corrupt([](auto &h) { h.prescale = 0; }),
      corrupt([](auto &h) { h.prescale = NAN; }), corrupt([](auto &h) { h.prescale = -2; }),
      corrupt([](auto &h) { h.count = 41; }),
  };
  for (Isa isa : isas()) {
    for (const Bytes &b : bad) {
      std::vector<float> y(40, 42.0f);
      REQUIRE(cpu::cast_decode(isa, b.data(), b.size(), 40, y.data(), DType::f32) ==
              CodecStatus::corrupt_header);
      REQUIRE(cpu::cast_decode_accumulate(isa, b.data(), b.size(), 40, y.data()) ==
              CodecStatus::corrupt_header);
      REQUIRE(std::all_of(y.begin(), y.end(), [](float v) { return v == 42.0f; }));
    }
    std::vector<float> y(40);
    REQUIRE(cpu::cast_decode(isa, good.data(), good.size() - 1, 40, y.data(), DType::f32) ==
            CodecStatus::truncated);
    REQUIRE(cpu::cast_decode(isa, good.data(), good.size(), 40, y.data(), DType::f64) ==
            CodecStatus::bad_argument);
  }
}

TEST_CASE("cast AVX2 path is bit-identical to the scalar reference", "[cast][simd]") {
  if (!cpu::isa_supported(Isa::avx2)) {
    WARN("no AVX2 on this CPU: skipped");
    return;
  }
  const size_t n = 4099;
  const auto f = GENERATE(CastFormat::fp16, CastFormat::bf16);
  const float prescale = GENERATE(1.0f, 0.37f);
  const auto x = random_bits(n, 6);
  const auto h = random_u16(n, 7);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    INFO("dtype " << bagua::dtype_name(t));
    const void *src = t == DType::f32 ? static_cast<const void *>(x.data()) : h.data();
    const Bytes ref = encode(Isa::scalar, src, t, n, f, prescale);
    REQUIRE(ref == encode(Isa::avx2, src, t, n, f, prescale));
    // Decode arbitrary wire bits (all classes) into every dtype.
    Bytes wire = ref;
    memcpy(wire.data() + 16, h.data(), 2 * n);
    std::vector<uint8_t> a(4 * n), b(4 * n);
    REQUIRE(cpu::cast_decode(Isa::scalar, wire.data(), wire.size(), n, a.data(), t) ==
            CodecStatus::ok);
    REQUIRE(cpu::cast_decode(Isa::avx2, wire.data(), wire.size(), n, b.data(), t) ==
            CodecStatus::ok);
    REQUIRE(a == b);
  }
  const Bytes enc = encode(Isa::scalar, normal(n, 8).data(), DType::f32, n, f, prescale);
  auto acc_a = normal(n, 9), acc_b = acc_a;
  REQUIRE(cpu::cast_decode_accumulate(Isa::scalar, enc.data(), enc.size(), n, acc_a.data()) ==
          CodecStatus::ok);
  REQUIRE(cpu::cast_decode_accumulate(Isa::avx2, enc.data(), enc.size(), n, acc_b.data()) ==
          CodecStatus::ok);
  REQUIRE(same_bits(acc_a, acc_b));
}
