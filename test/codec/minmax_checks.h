// The checks every min-max codec (q8, q4) must pass, written once over a
// descriptor of the codec: sizes, the error bound of half a step, non-finite
// blocks, exact accumulation, half-precision inputs, header checks and
// bit-identity of the AVX2 path with the portable reference.
#ifndef BAGUA_TEST_CODEC_MINMAX_CHECKS_H
#define BAGUA_TEST_CODEC_MINMAX_CHECKS_H

#include <catch2/catch.hpp>
#include <string>

#include "helpers.h"

namespace codec_test {

namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;

// A min-max codec as the checks see it.
struct MinMaxCodec {
  double levels;                              // 255 or 15 steps per block range
  size_t (*payload_bytes)(size_t elems);      // padded payload of a block
  size_t (*encoded_bytes)(size_t, uint32_t);  // public size function
  CodecStatus (*encode_best)(const void *, DType, size_t, uint32_t, void *);
  CodecStatus (*encode)(Isa, const void *, DType, size_t, uint32_t, void *);
  CodecStatus (*decode)(Isa, const void *, size_t, size_t, uint32_t, void *, DType);
  CodecStatus (*decode_accumulate)(Isa, const void *, size_t, size_t, uint32_t, float *);
  // A block minimum for which, with max = FLT_MAX, the rounded step carries
  // the top quantized value past FLT_MAX (the decoder must saturate it).
  float overflow_min;
};

inline Bytes encode(const MinMaxCodec &c, Isa isa, const void *src, DType t, size_t count,
                    uint32_t block) {
  Bytes out(c.encoded_bytes(count, block));
  REQUIRE(c.encode(isa, src, t, count, block, out.data()) == CodecStatus::ok);
  return out;
}

inline std::vector<float> decode(const MinMaxCodec &c, Isa isa, const Bytes &in, size_t count,
                                 uint32_t block) {
  std::vector<float> out(count);
  REQUIRE(c.decode(isa, in.data(), in.size(), count, block, out.data(), DType::f32) ==
          CodecStatus::ok);
  return out;
}

// Max error of each element: half a step of its block plus float rounding.
inline void check_bound(const MinMaxCodec &c, const std::vector<float> &x,
                        const std::vector<float> &y, uint32_t block) {
  for (size_t first = 0; first < x.size(); first += block) {
    const size_t last = std::min(x.size(), first + block);
    const auto [lo, hi] = std::minmax_element(x.begin() + first, x.begin() + last);
    const double range = double(*hi) - double(*lo);
    const double tol = range / (2 * c.levels) + range * 0x1p-22 +
                       ulp(std::max(fabsf(*lo), fabsf(*hi))) +
                       std::numeric_limits<float>::denorm_min();
    for (size_t i = first; i < last; ++i) {
      INFO("i=" << i << " x=" << x[i] << " y=" << y[i] << " range=" << range);
      REQUIRE(fabs(double(x[i]) - double(y[i])) <= tol);
    }
  }
}

inline void check_encoded_sizes(const MinMaxCodec &c) {
  for (uint32_t block : {64u, 256u, 2048u}) {
    for (size_t count : {0, 1, 15, 63, 64, 65, 2047, 2048, 2049, 10000}) {
      size_t expected = 0;
      for (size_t first = 0; first < count; first += block) {
        expected += 16 + c.payload_bytes(std::min<size_t>(block, count - first));
      }
      REQUIRE(c.encoded_bytes(count, block) == expected);
      // The encoder writes exactly that many bytes: the canary after them survives.
      const auto x = normal(count, 1);
      Bytes out(expected + 32, 0xab);
      REQUIRE(c.encode_best(x.data(), DType::f32, count, block, out.data()) == CodecStatus::ok);
      REQUIRE(std::all_of(out.begin() + expected, out.end(), [](uint8_t b) { return b == 0xab; }));
    }
  }
}

inline void check_bad_arguments(const MinMaxCodec &c) {
  const float x[4] = {1, 2, 3, 4};
  uint8_t out[64];
  for (uint32_t block : {0u, 1u, 32u, 100u, 3000u, 1u << 21}) {
    REQUIRE_FALSE(codec::block_size_valid(block));
    REQUIRE(c.encoded_bytes(4, block) == 0);
    REQUIRE(c.encode_best(x, DType::f32, 4, block, out) == CodecStatus::bad_argument);
  }
  REQUIRE(c.encode_best(x, DType::f64, 4, 64, out) == CodecStatus::bad_argument);
  REQUIRE(c.encode_best(nullptr, DType::f32, 4, 64, out) == CodecStatus::bad_argument);
}

// Inputs for the error-bound test, by name.
inline std::vector<float> bound_input(const std::string &kind, size_t n) {
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

inline const char *const kBoundKinds[] = {"normal",   "offset", "constant", "tiny",
                                          "denormal", "huge",   "extremes", "signed zeros"};

inline void check_error_bound(const MinMaxCodec &c, const std::string &kind) {
  const size_t n = 3 * 1024 + 77;
  const auto x = bound_input(kind, n);
  for (Isa isa : isas()) {
    for (uint32_t block : {64u, 1024u, 4096u}) {
      INFO(kind << " " << cpu::isa_name(isa) << " block " << block);
      const auto y = decode(c, isa, encode(c, isa, x.data(), DType::f32, n, block), n, block);
      check_bound(c, x, y, block);
    }
  }
}

inline void check_constant_blocks(const MinMaxCodec &c) {
  const std::vector<float> x(1000, -7.125f);
  for (Isa isa : isas()) {
    const auto y =
        decode(c, isa, encode(c, isa, x.data(), DType::f32, x.size(), 256), x.size(), 256);
    REQUIRE(same_bits(x, y));
  }
}

inline void check_non_finite_blocks(const MinMaxCodec &c) {
  const uint32_t block = 256;
  auto x = normal(6 * block, 3);
  x[block + 17] = NAN;
  x[3 * block + 255] = INFINITY;
  x[4 * block] = -INFINITY;
  const auto is_bad = [&](size_t i) { return i / block == 1 || i / block == 3 || i / block == 4; };
  for (Isa isa : isas()) {
    const Bytes enc = encode(c, isa, x.data(), DType::f32, x.size(), block);
    const auto y = decode(c, isa, enc, x.size(), block);
    std::vector<float> acc(x.size(), 1.0f);
    REQUIRE(c.decode_accumulate(isa, enc.data(), enc.size(), x.size(), block, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("i=" << i);
      REQUIRE(std::isnan(y[i]) == is_bad(i));
      REQUIRE(std::isnan(acc[i]) == is_bad(i));
    }
  }
}

// Block `b` of x (of `block` elements) rises from c.overflow_min to FLT_MAX.
inline void fill_rising_to_max(const MinMaxCodec &c, std::vector<float> &x, size_t b,
                               uint32_t block) {
  const float max = std::numeric_limits<float>::max(), min = c.overflow_min;
  for (size_t i = b * block; i < (b + 1) * block && i < x.size(); ++i)
    x[i] = std::min(max, min + (max - min) * (float(i % block) / float(block - 1)));
}

inline void check_reaching_float_max(const MinMaxCodec &c) {
  // The decoder saturates the top step instead of returning Inf for finite input.
  const uint32_t block = 64;
  std::vector<float> x(2 * block + 5);
  for (size_t b = 0; b < 3; ++b) fill_rising_to_max(c, x, b, block);
  x.back() = std::numeric_limits<float>::max();
  for (Isa isa : isas()) {
    INFO(cpu::isa_name(isa));
    const auto y =
        decode(c, isa, encode(c, isa, x.data(), DType::f32, x.size(), block), x.size(), block);
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("i=" << i << " x=" << x[i] << " y=" << y[i]);
      REQUIRE(std::isfinite(y[i]));
    }
    REQUIRE(y[block - 1] == std::numeric_limits<float>::max());
    check_bound(c, x, y, block);
  }
}

inline void check_accumulate_saturates(const MinMaxCodec &c) {
  // Constant blocks of +-0.75 FLT_MAX decode exactly; added to the overflow
  // accumulator they overflow, cancel, or meet Inf and NaN.
  const uint32_t block = 64;
  const float big = 0.75f * std::numeric_limits<float>::max();
  std::vector<float> x(3 * block + 7);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / block) % 2 ? -big : big;
  const auto acc0 = overflow_accumulator(x.size());
  for (Isa isa : isas()) {
    INFO(cpu::isa_name(isa));
    const Bytes enc = encode(c, isa, x.data(), DType::f32, x.size(), block);
    auto acc = acc0;
    REQUIRE(c.decode_accumulate(isa, enc.data(), enc.size(), x.size(), block, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < x.size(); ++i) {
      INFO("i=" << i << " acc0=" << acc0[i] << " x=" << x[i] << " acc=" << acc[i]);
      REQUIRE(same_value(acc[i], saturated_sum(acc0[i], x[i])));
    }
  }
}

// An accumulator holding NaNs of any sign and payload comes out with the
// canonical NaN there (and the sum elsewhere), on every ISA.
inline void check_accumulate_canonical_nan(const MinMaxCodec &c) {
  const auto x = normal(1000, 13);
  const auto acc0 = with_odd_nans(normal(1000, 14));
  for (Isa isa : isas()) {
    INFO(cpu::isa_name(isa));
    const Bytes enc = encode(c, isa, x.data(), DType::f32, x.size(), 256);
    auto acc = acc0;
    REQUIRE(c.decode_accumulate(isa, enc.data(), enc.size(), x.size(), 256, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < x.size(); i += 2) REQUIRE(std::isnan(acc[i]));
    REQUIRE(nans_canonical(acc));
  }
}

inline void check_accumulate_adds_decoded(const MinMaxCodec &c) {
  const auto x = normal(5000, 11);
  const auto acc0 = normal(5000, 12);
  for (Isa isa : isas()) {
    const Bytes enc = encode(c, isa, x.data(), DType::f32, x.size(), 1024);
    const auto y = decode(c, isa, enc, x.size(), 1024);
    auto acc = acc0;
    REQUIRE(c.decode_accumulate(isa, enc.data(), enc.size(), x.size(), 1024, acc.data()) ==
            CodecStatus::ok);
    for (size_t i = 0; i < x.size(); ++i) REQUIRE(acc[i] == acc0[i] + y[i]);
  }
}

inline void check_half_types(const MinMaxCodec &c, DType t) {
  const auto h = to_half(normal(4000, 5), t);
  const auto x = from_half(h, t);
  for (Isa isa : isas()) {
    const Bytes enc = encode(c, isa, h.data(), t, h.size(), 512);
    REQUIRE(enc == encode(c, isa, x.data(), DType::f32, x.size(), 512));
    const auto y = decode(c, isa, enc, x.size(), 512);
    check_bound(c, x, y, 512);
    std::vector<uint16_t> yh(h.size());
    REQUIRE(c.decode(isa, enc.data(), enc.size(), h.size(), 512, yh.data(), t) == CodecStatus::ok);
    REQUIRE(yh == to_half(y, t));
  }
}

inline void check_corrupt_headers(const MinMaxCodec &c) {
  const uint32_t block = 128;
  const size_t n = 3 * block + 5;
  const auto x = normal(n, 9);
  const Bytes good = encode(c, Isa::scalar, x.data(), DType::f32, n, block);
  const size_t last = 3 * (16 + c.payload_bytes(block));  // header of the short last block
  const auto corrupt = [&](size_t at, auto mutate) {
    Bytes bad = good;
    codec::MinMaxBlockHeader h;
    memcpy(&h, bad.data() + at, sizeof h);
    mutate(h);
    memcpy(bad.data() + at, &h, sizeof h);
    return bad;
  };
  std::vector<Bytes> bad = {
      corrupt(0, [](auto &h) { h.tag = 0; }),
      corrupt(0, [](auto &h) { h.tag = h.tag == codec::kTagQ8 ? codec::kTagQ4 : codec::kTagQ8; }),
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
      REQUIRE(c.decode(isa, b.data(), b.size(), n, block, y.data(), DType::f32) ==
              CodecStatus::corrupt_header);
      REQUIRE(c.decode_accumulate(isa, b.data(), b.size(), n, block, y.data()) ==
              CodecStatus::corrupt_header);
      REQUIRE(std::all_of(y.begin(), y.end(), [](float v) { return v == 42.0f; }));
    }
    std::vector<float> y(n);
    REQUIRE(c.decode(isa, good.data(), good.size() - 1, n, block, y.data(), DType::f32) ==
            CodecStatus::truncated);
    REQUIRE(c.decode(isa, good.data(), good.size() + 1, n, block, y.data(), DType::f32) ==
            CodecStatus::bad_argument);
    REQUIRE(c.decode(isa, good.data(), good.size(), n, 256, y.data(), DType::f32) !=
            CodecStatus::ok);
    REQUIRE(c.decode(isa, good.data(), good.size(), n, block, y.data(), DType::f64) ==
            CodecStatus::bad_argument);
  }
}

// Blocks of every kind (normal, non-finite, range overflowing float, tiny
// range, rising to FLT_MAX) and a short tail, in every dtype: AVX2 bytes and
// values equal the portable reference's; accumulating too, with large,
// infinite and NaN accumulator entries.
inline void check_avx2_matches_scalar(const MinMaxCodec &c, uint32_t block, size_t tail) {
  if (!cpu::isa_supported(Isa::avx2)) {
    WARN("no AVX2 on this CPU: skipped");
    return;
  }
  const size_t n = 5 * block + tail;
  auto x = normal(n, 21);
  x[block + 3] = NAN;                                             // non-finite block
  for (size_t i = 2 * block; i < 3 * block; ++i) x[i] *= 1e38f;   // wide (overflowing) block
  for (size_t i = 3 * block; i < 4 * block; ++i) x[i] *= 1e-35f;  // wide (tiny) block
  fill_rising_to_max(c, x, 4, block);                             // saturated top step
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    INFO("dtype " << bagua::dtype_name(t) << " block " << block << " tail " << tail);
    const auto h = to_half(x, t);
    const void *src = t == DType::f32 ? static_cast<const void *>(x.data()) : h.data();
    const Bytes ref = encode(c, Isa::scalar, src, t, n, block);
    REQUIRE(ref == encode(c, Isa::avx2, src, t, n, block));
    Bytes a(n * bagua::dtype_size(t)), b(a.size());
    REQUIRE(c.decode(Isa::scalar, ref.data(), ref.size(), n, block, a.data(), t) ==
            CodecStatus::ok);
    REQUIRE(c.decode(Isa::avx2, ref.data(), ref.size(), n, block, b.data(), t) == CodecStatus::ok);
    REQUIRE(a == b);
  }
  const Bytes enc = encode(c, Isa::scalar, x.data(), DType::f32, n, block);
  auto acc_a = normal(n, 22);
  // Overflowing, infinite and NaN entries over a normal block (the plain
  // vector sum), the wide one (scalar) and the one rising to FLT_MAX (the
  // saturating vector sum).
  const auto extremes = overflow_accumulator(block);
  for (size_t b : {0, 2, 4}) std::copy(extremes.begin(), extremes.end(), acc_a.begin() + b * block);
  auto acc_b = acc_a;
  REQUIRE(c.decode_accumulate(Isa::scalar, enc.data(), enc.size(), n, block, acc_a.data()) ==
          CodecStatus::ok);
  REQUIRE(c.decode_accumulate(Isa::avx2, enc.data(), enc.size(), n, block, acc_b.data()) ==
          CodecStatus::ok);
  REQUIRE(same_bits(acc_a, acc_b));
}

}  // namespace codec_test

#endif
