#include "reduce.hpp"

#include <cstdint>
#include <cstring>

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

namespace {

// Words whose exponent bits (kExponent) are all set are NaN or infinite:
// adding the exponent's lowest bit then carries into the sign bit. ORing
// those sums (branch-free, vectorised) leaves the sign bit set iff any is.
template <class Word, Word kExponent>
bool words_finite(const void *buf, size_t count) {
  constexpr Word kLowest = Word(kExponent & ~(kExponent - 1));
  constexpr Word kSign = Word(Word(1) << (8 * sizeof(Word) - 1));
  const auto *bytes = static_cast<const unsigned char *>(buf);
  Word any = 0;
  for (size_t i = 0; i < count; ++i) {
    Word w;
    std::memcpy(&w, bytes + i * sizeof(Word), sizeof(Word));
    any |= Word((w & kExponent) + kLowest);
  }
  return (any & kSign) == 0;
}

}  // namespace

bool all_finite(const void *buf, size_t count, DType t) {
  switch (t) {
    case DType::f32: return words_finite<uint32_t, 0x7f800000u>(buf, count);
    case DType::f64: return words_finite<uint64_t, 0x7ff0000000000000u>(buf, count);
    case DType::f16: return words_finite<uint16_t, 0x7c00u>(buf, count);
    case DType::bf16: return words_finite<uint16_t, 0x7f80u>(buf, count);
  }
  return true;
}

}  // namespace bagua
