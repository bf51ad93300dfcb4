// Element types and reduction operations, independent of MPI handles.
#pragma once

#include <cstddef>
#include <cstdint>

namespace bagua {

enum class DType : uint8_t { f32, f64, f16, bf16 };
enum class ReduceOp : uint8_t { sum, max, min, avg };

constexpr size_t dtype_size(DType t) {
  return t == DType::f64 ? 8 : t == DType::f32 ? 4 : 2;
}

const char *dtype_name(DType t);
const char *op_name(ReduceOp op);

}  // namespace bagua
