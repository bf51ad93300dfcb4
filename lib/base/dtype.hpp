// The vocabulary every layer shares, independent of MPI handles: element
// types (kernels/dtype.h, shared with the codecs), reduction operations, wire
// formats and memory types.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dtype.h"

namespace bagua {

enum class ReduceOp : uint8_t { sum, max, min, avg, prod };

// What crosses the wire: exact elements, or one of the codecs of the wire
// registry (wires.hpp), whose rows give every other value. The values are
// those of bagua_algorithm (include/bagua.h).
enum class Wire : uint8_t { exact = 0 };

// Where a buffer lives.
enum class Memory : uint8_t { host, cuda };

// "MPI_FLOAT", "BAGUA_AVG", ...: names as callers spell the handles.
const char *dtype_name(DType t);
const char *op_name(ReduceOp op);

}  // namespace bagua
