// Element types (kernels/dtype.h, shared with the codecs) and reduction
// operations, independent of MPI handles.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dtype.h"

namespace bagua {

enum class ReduceOp : uint8_t { sum, max, min, avg };

const char *dtype_name(DType t);
const char *op_name(ReduceOp op);

}  // namespace bagua
