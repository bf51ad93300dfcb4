// Elementwise reduction kernels, the finiteness check, and the ring's chunk/segment plan.
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <vector>

#include "algo/reduce.hpp"
#include "algo/ring_plan.hpp"
#include "half.h"

using bagua::DType;
using bagua::ReduceOp;

TEST_CASE("reduce_combine on float32", "[reduce]") {
  std::vector<float> a{1, -2, 3, 4}, b{5, 6, -7, 4}, out(4);
  bagua::reduce_combine(out.data(), a.data(), b.data(), 4, DType::f32, ReduceOp::sum);
  CHECK(out == std::vector<float>{6, 4, -4, 8});
  bagua::reduce_combine(out.data(), a.data(), b.data(), 4, DType::f32, ReduceOp::max);
  CHECK(out == std::vector<float>{5, 6, 3, 4});
  bagua::reduce_combine(out.data(), a.data(), b.data(), 4, DType::f32, ReduceOp::min);
  CHECK(out == std::vector<float>{1, -2, -7, 4});
  bagua::scale_divide(a.data(), 4, DType::f32, 2);
  CHECK(a == std::vector<float>{0.5f, -1, 1.5f, 2});
}

TEST_CASE("reduce_combine on half types rounds once per addition", "[reduce]") {
  std::vector<uint16_t> a(3), b(3);
  const float xs[] = {1.0f, 2048.0f, 0.5f}, ys[] = {0x1p-11f, 1.0f, 0.25f};
  for (int i = 0; i < 3; ++i) {
    a[i] = bagua::float_to_fp16(xs[i]);
    b[i] = bagua::float_to_fp16(ys[i]);
  }
  bagua::reduce_combine(a.data(), a.data(), b.data(), 3, DType::f16, ReduceOp::sum);
  CHECK(bagua::fp16_to_float(a[0]) == 1.0f);     // tie to even
  CHECK(bagua::fp16_to_float(a[1]) == 2048.0f);  // 2049 not representable
  CHECK(bagua::fp16_to_float(a[2]) == 0.75f);
  std::vector<uint16_t> c{bagua::float_to_bf16(3.0f)}, d{bagua::float_to_bf16(5.0f)};
  bagua::reduce_combine(c.data(), c.data(), d.data(), 1, DType::bf16, ReduceOp::sum);
  CHECK(bagua::bf16_to_float(c[0]) == 8.0f);
}

namespace {

// count words of type t holding `word` (its low bytes), with `bad` at `at`.
std::vector<unsigned char> words(DType t, size_t count, uint64_t word, size_t at, uint64_t bad) {
  const size_t size = bagua::dtype_size(t);
  std::vector<unsigned char> out(count * size);
  for (size_t i = 0; i < count; ++i) std::memcpy(&out[i * size], i == at ? &bad : &word, size);
  return out;
}

}  // namespace

TEST_CASE("all_finite finds any NaN or infinity, of either sign, anywhere", "[reduce]") {
  struct Bits {
    DType t;
    uint64_t largest, inf, nan, sign;
  };
  const Bits types[] = {
      {DType::f32, 0x7f7fffff, 0x7f800000, 0x7fc00001, 0x80000000},
      {DType::f64, 0x7fefffffffffffff, 0x7ff0000000000000, 0x7ff8000000000001, 0x8000000000000000},
      {DType::f16, 0x7bff, 0x7c00, 0x7e01, 0x8000},
      {DType::bf16, 0x7f7f, 0x7f80, 0x7fc1, 0x8000}};
  const size_t count = 37;  // not a multiple of any vector width
  for (const Bits &b : types) {
    INFO(bagua::dtype_name(b.t));
    // The largest finite magnitudes, both signs, and a subnormal are finite.
    for (uint64_t word : {b.largest, b.largest | b.sign, uint64_t(1)})
      CHECK(bagua::all_finite(words(b.t, count, word, 0, word).data(), count, b.t));
    for (uint64_t bad : {b.inf, b.inf | b.sign, b.nan, b.nan | b.sign})
      for (size_t at : {size_t(0), size_t(17), count - 1})
        CHECK_FALSE(bagua::all_finite(words(b.t, count, b.largest, at, bad).data(), count, b.t));
  }
}

TEST_CASE("ring plan covers the buffer exactly once", "[ring]") {
  for (size_t count : {0u, 1u, 5u, 7u, 100u, 1001u})
    for (int n : {1, 2, 3, 4, 7})
      for (size_t seg : {1u, 3u, 64u}) {
        bagua::RingPlan plan(count, n, seg);
        std::vector<int> covered(count, 0);
        for (int c = 0; c < n; ++c)
          for (size_t k = 0; k < plan.segments(c); ++k) {
            const bagua::Range s = plan.segment(c, k);
            REQUIRE(s.count > 0);
            REQUIRE(s.count <= seg);
            for (size_t i = s.begin; i < s.begin + s.count; ++i) covered[i]++;
          }
        CHECK(std::all_of(covered.begin(), covered.end(), [](int v) { return v == 1; }));
        CHECK(plan.max_chunk() >= plan.chunk(n - 1).count);
      }
}
