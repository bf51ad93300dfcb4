// Elementwise arithmetic of exact reductions, in each type's compute type
// (kernels/dtype.h): float32, or float64 for f64; rounded to nearest even.
#pragma once

#include <cstddef>

#include "../base/dtype.hpp"

namespace bagua {

// dst[i] = a[i] (op) b[i] for i < count; dst may alias a or b. ReduceOp::avg
// combines as a sum (divide with scale_divide once all contributions are in).
void reduce_combine(void *dst, const void *a, const void *b, size_t count, DType t, ReduceOp op);

// buf[i] /= divisor, rounded once in the element type.
void scale_divide(void *buf, size_t count, DType t, int divisor);

// dst[i] = src[i] * factor, rounded once in the element type.
void scale_into(void *dst, const void *src, size_t count, DType t, double factor);

// Whether no element of buf is NaN or infinite (a test of the exponent
// bits: one pass over the buffer, vectorised).
bool all_finite(const void *buf, size_t count, DType t);

}  // namespace bagua
