#include "reduce.hpp"

namespace bagua {
namespace {

// max/min as "a unless b is strictly better", so combining (lower rank,
// higher rank) operands in a fixed order gives the same bits everywhere.
struct Sum {
  template <class C>
  static C apply(C a, C b) {
    return a + b;
  }
};
struct Max {
  template <class C>
  static C apply(C a, C b) {
    return b > a ? b : a;
  }
};
struct Prod {
  template <class C>
  static C apply(C a, C b) {
    return a * b;
  }
};
struct Min {
  template <class C>
  static C apply(C a, C b) {
    return b < a ? b : a;
  }
};

template <class E, class Op>
void combine(void *dst, const void *a, const void *b, size_t n) {
  for (size_t i = 0; i < n; ++i)
    elem::store_at<E>(dst, i, Op::apply(elem::load_at<E>(a, i), elem::load_at<E>(b, i)));
}

template <class E>
void combine_op(void *dst, const void *a, const void *b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: return combine<E, Sum>(dst, a, b, n);
    case ReduceOp::max: return combine<E, Max>(dst, a, b, n);
    case ReduceOp::min: return combine<E, Min>(dst, a, b, n);
    case ReduceOp::prod: return combine<E, Prod>(dst, a, b, n);
  }
}

}  // namespace

void reduce_combine(void *dst, const void *a, const void *b, size_t count, DType t, ReduceOp op) {
  elem::visit(t, [&]<class E>(E) { combine_op<E>(dst, a, b, count, op); });
}

void scale_divide(void *buf, size_t count, DType t, int divisor) {
  elem::visit(t, [&]<class E>(E) {
    const auto d = static_cast<typename E::Compute>(divisor);
    for (size_t i = 0; i < count; ++i) elem::store_at<E>(buf, i, elem::load_at<E>(buf, i) / d);
  });
}

void scale_into(void *dst, const void *src, size_t count, DType t, double factor) {
  elem::visit(t, [&]<class E>(E) {
    const auto f = static_cast<typename E::Compute>(factor);
    for (size_t i = 0; i < count; ++i) elem::store_at<E>(dst, i, elem::load_at<E>(src, i) * f);
  });
}

}  // namespace bagua
