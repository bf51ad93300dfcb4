// float16 / bfloat16 conversions: exhaustive round trips and rounding rules.
#include <catch2/catch.hpp>
#include <cmath>

#include "half.h"

TEST_CASE("every float16 value round-trips through float32", "[half]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bagua::fp16_to_float(uint16_t(h));
    if (std::isnan(f)) {
      CHECK(std::isnan(bagua::fp16_to_float(bagua::float_to_fp16(f))));
      continue;
    }
    INFO("bits " << h);
    REQUIRE(bagua::float_to_fp16(f) == h);
  }
}

TEST_CASE("every bfloat16 value round-trips through float32", "[half]") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bagua::bf16_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    REQUIRE(bagua::float_to_bf16(f) == h);
  }
}

TEST_CASE("float16 rounds to nearest even and saturates to infinity", "[half]") {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(1.0f + 0x1p-11f)) == 1.0f);
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(1.0f + 3 * 0x1p-11f)) == 1.0f + 0x1p-9f);
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(65504.0f)) == 65504.0f);
  CHECK(std::isinf(bagua::fp16_to_float(bagua::float_to_fp16(65520.0f))));
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(65519.0f)) == 65504.0f);
  // Subnormals: 2^-24 is the smallest; half of it ties to zero.
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(0x1p-24f)) == 0x1p-24f);
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(0x1p-25f)) == 0.0f);
  CHECK(bagua::fp16_to_float(bagua::float_to_fp16(0x1.8p-24f)) == 0x1p-23f);
  CHECK(std::signbit(bagua::fp16_to_float(bagua::float_to_fp16(-0.0f))));
}

TEST_CASE("bfloat16 rounds to nearest even", "[half]") {
  CHECK(bagua::bf16_to_float(bagua::float_to_bf16(1.0f + 0x1p-8f)) == 1.0f);
  CHECK(bagua::bf16_to_float(bagua::float_to_bf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);
  CHECK(std::isnan(bagua::bf16_to_float(bagua::float_to_bf16(std::nanf("")))));
}
