// q4 min-max codec: the shared min-max checks (minmax_checks.h) with 15 steps
// per block range, plus the nibble layout and odd-length tails.
#include "minmax_checks.h"

using namespace codec_test;

namespace {

const MinMaxCodec kQ4{15,
                      [](size_t n) { return (n + 31) / 32 * 16; },
                      codec::q4_encoded_bytes,
                      codec::q4_encode,
                      cpu::q4_encode,
                      cpu::q4_decode,
                      cpu::q4_decode_accumulate,
                      0x1.00016p+120f};

}  // namespace

TEST_CASE("q4 encoded size is a pure function of count and block", "[q4]") {
  check_encoded_sizes(kQ4);
}

TEST_CASE("q4 rejects bad block sizes and dtypes", "[q4]") {
  check_bad_arguments(kQ4);
  REQUIRE(codec::block_size_valid(codec::kDefaultQ4Block));
}

TEST_CASE("q4 error is at most half a step of the block", "[q4]") {
  check_error_bound(kQ4, GENERATE(from_range(std::begin(kBoundKinds), std::end(kBoundKinds))));
}

TEST_CASE("q4 constant blocks decode exactly", "[q4]") { check_constant_blocks(kQ4); }

TEST_CASE("q4 non-finite values make their whole block NaN", "[q4]") {
  check_non_finite_blocks(kQ4);
}

TEST_CASE("q4 a block reaching FLT_MAX decodes to finite values", "[q4]") {
  check_reaching_float_max(kQ4);
}

TEST_CASE("q4 decode_accumulate saturates a finite overflow, keeps Inf and NaN", "[q4]") {
  check_accumulate_saturates(kQ4);
}

TEST_CASE("q4 decode_accumulate writes the canonical NaN", "[q4]") {
  check_accumulate_canonical_nan(kQ4);
}

TEST_CASE("q4 decode_accumulate adds exactly the decoded values", "[q4]") {
  check_accumulate_adds_decoded(kQ4);
}

TEST_CASE("q4 float16 and bfloat16 inputs and outputs", "[q4]") {
  check_half_types(kQ4, GENERATE(DType::f16, DType::bf16));
}

TEST_CASE("q4 decoders reject corrupt headers and wrong lengths", "[q4]") {
  check_corrupt_headers(kQ4);
}

TEST_CASE("q4 AVX2 path is bit-identical to the scalar reference", "[q4][simd]") {
  check_avx2_matches_scalar(kQ4, GENERATE(64u, 256u, 2048u), GENERATE(0u, 1u, 33u, 63u));
}

TEST_CASE("q4 packs the even element in the low nibble", "[q4]") {
  // Values 0..15 in a block with min 0 and max 15: every step is 1, so each
  // element is its own quantized value and decodes exactly.
  const size_t n = 64 + 7;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = float((i * 7) % 16);
  x[64] = 0;
  x[65] = 15;
  for (Isa isa : isas()) {
    const Bytes enc = encode(kQ4, isa, x.data(), DType::f32, n, 64);
    REQUIRE(enc.size() == 16 + 32 + 16 + 16);
    REQUIRE(enc[8] == codec::kTagQ4);
    for (size_t i = 0; i < 64; i += 2) {
      INFO("element " << i);
      REQUIRE(enc[16 + i / 2] == uint8_t(int(x[i]) | int(x[i + 1]) << 4));
    }
    // Short last block of 7 elements: 4 bytes, the last high nibble and the padding zero.
    const size_t tail = 16 + 32 + 16;
    REQUIRE(enc[tail + 3] == uint8_t(int(x[70])));
    REQUIRE(std::all_of(enc.begin() + tail + 4, enc.end(), [](uint8_t b) { return b == 0; }));
    REQUIRE(same_bits(decode(kQ4, isa, enc, n, 64), x));
  }
}

TEST_CASE("q4 round trips every short length within the bound", "[q4]") {
  const auto x = normal(3 * 64 + 64, 41);
  for (Isa isa : isas()) {
    for (size_t n : {1, 2, 3, 31, 32, 33, 63, 65, 127, 129, 255}) {
      INFO(cpu::isa_name(isa) << " n " << n);
      const std::vector<float> part(x.begin(), x.begin() + n);
      const auto y = decode(kQ4, isa, encode(kQ4, isa, part.data(), DType::f32, n, 64), n, 64);
      check_bound(kQ4, part, y, 64);
    }
  }
}
