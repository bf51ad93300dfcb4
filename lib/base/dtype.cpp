#include "dtype.hpp"

namespace bagua {

const char *dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
  }
  return "?";
}

const char *op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

}  // namespace bagua
