#include "reduce.hpp"

#include <cstdint>

#include "half.h"

namespace bagua {
namespace {

// Storage types with their float32 (or float64) compute type.
struct F32 {
  using Store = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};
struct F64 {
  using Store = double;
  static double load(double v) { return v; }
  static double store(double v) { return v; }
};
struct F16 {
  using Store = uint16_t;
  static float load(uint16_t v) { return fp16_to_float(v); }
  static uint16_t store(float v) { return float_to_fp16(v); }
};
struct BF16 {
  using Store = uint16_t;
  static float load(uint16_t v) { return bf16_to_float(v); }
  static uint16_t store(float v) { return float_to_bf16(v); }
};

// max/min as "a unless b is strictly better", so combining (lower rank,
// higher rank) operands in a fixed order gives the same bits everywhere.
struct Sum {
  template <class C> static C apply(C a, C b) { return a + b; }
};
struct Max {
  template <class C> static C apply(C a, C b) { return b > a ? b : a; }
};
struct Min {
  template <class C> static C apply(C a, C b) { return b < a ? b : a; }
};

template <class T, class Op>
void combine(void *dst, const void *a, const void *b, size_t n) {
  using S = typename T::Store;
  S *d = static_cast<S *>(dst);
  const S *x = static_cast<const S *>(a);
  const S *y = static_cast<const S *>(b);
  for (size_t i = 0; i < n; ++i) d[i] = T::store(Op::apply(T::load(x[i]), T::load(y[i])));
}

template <class T>
void combine_op(void *dst, const void *a, const void *b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return combine<T, Sum>(dst, a, b, n);
    case ReduceOp::max: return combine<T, Max>(dst, a, b, n);
    case ReduceOp::min: return combine<T, Min>(dst, a, b, n);
  }
}

template <class T>
void divide(void *buf, size_t n, int divisor) {
  using S = typename T::Store;
  S *p = static_cast<S *>(buf);
  const auto d = static_cast<decltype(T::load(S{}))>(divisor);
  for (size_t i = 0; i < n; ++i) p[i] = T::store(T::load(p[i]) / d);
}

}  // namespace

void reduce_combine(void *dst, const void *a, const void *b, size_t count, DType t, ReduceOp op) {
  switch (t) {
    case DType::f32: return combine_op<F32>(dst, a, b, count, op);
    case DType::f64: return combine_op<F64>(dst, a, b, count, op);
    case DType::f16: return combine_op<F16>(dst, a, b, count, op);
    case DType::bf16: return combine_op<BF16>(dst, a, b, count, op);
  }
}

void scale_divide(void *buf, size_t count, DType t, int divisor) {
  switch (t) {
    case DType::f32: return divide<F32>(buf, count, divisor);
    case DType::f64: return divide<F64>(buf, count, divisor);
    case DType::f16: return divide<F16>(buf, count, divisor);
    case DType::bf16: return divide<BF16>(buf, count, divisor);
  }
}

}  // namespace bagua
