// Elementwise combination of buffers, the arithmetic of exact reductions.
#pragma once

#include <cstddef>

#include "../base/dtype.hpp"

namespace bagua {

// dst[i] = a[i] (op) b[i] for i < count; dst may alias a or b. ReduceOp::avg
// combines as a sum (divide with scale_divide once all contributions are in).
// Half types are combined in float32 and rounded to nearest even.
void reduce_combine(void *dst, const void *a, const void *b, size_t count, DType t, ReduceOp op);

// buf[i] /= divisor, rounded once in the element type.
void scale_divide(void *buf, size_t count, DType t, int divisor);

}  // namespace bagua
