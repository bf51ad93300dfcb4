// q8 min-max codec: the shared min-max checks (minmax_checks.h) with 255
// steps per block range.
#include "minmax_checks.h"

using namespace codec_test;

namespace {

const MinMaxCodec kQ8{255,
                      [](size_t n) { return (n + 15) / 16 * 16; },
                      codec::q8_encoded_bytes,
                      codec::q8_encode,
                      cpu::q8_encode,
                      cpu::q8_decode,
                      cpu::q8_decode_accumulate,
                      0x1.bdc526p+126f};

}  // namespace

TEST_CASE("q8 encoded size is a pure function of count and block", "[q8]") {
  check_encoded_sizes(kQ8);
}

TEST_CASE("q8 rejects bad block sizes and dtypes", "[q8]") {
  check_bad_arguments(kQ8);
  REQUIRE(codec::block_size_valid(codec::kDefaultQ8Block));
}

TEST_CASE("q8 error is at most half a step of the block", "[q8]") {
  check_error_bound(kQ8, GENERATE(from_range(std::begin(kBoundKinds), std::end(kBoundKinds))));
}

TEST_CASE("q8 constant blocks decode exactly", "[q8]") { check_constant_blocks(kQ8); }

TEST_CASE("q8 non-finite values make their whole block NaN", "[q8]") {
  check_non_finite_blocks(kQ8);
}

TEST_CASE("q8 a block reaching FLT_MAX decodes to finite values", "[q8]") {
  check_reaching_float_max(kQ8);
}

TEST_CASE("q8 decode_accumulate saturates a finite overflow, keeps Inf and NaN", "[q8]") {
  check_accumulate_saturates(kQ8);
}

TEST_CASE("q8 decode_accumulate writes the canonical NaN", "[q8]") {
  check_accumulate_canonical_nan(kQ8);
}

TEST_CASE("q8 decode_accumulate adds exactly the decoded values", "[q8]") {
  check_accumulate_adds_decoded(kQ8);
}

TEST_CASE("q8 float16 and bfloat16 inputs and outputs", "[q8]") {
  check_half_types(kQ8, GENERATE(DType::f16, DType::bf16));
}

TEST_CASE("q8 decoders reject corrupt headers and wrong lengths", "[q8]") {
  check_corrupt_headers(kQ8);
  REQUIRE(std::string(codec::codec_status_name(CodecStatus::truncated)) == "truncated");
}

TEST_CASE("q8 AVX2 path is bit-identical to the scalar reference", "[q8][simd]") {
  // The last block takes the decoder's 16-, 8- and 1-element steps.
  check_avx2_matches_scalar(kQ8, GENERATE(64u, 2048u), 45);
}
