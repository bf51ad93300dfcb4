#include "dtype.hpp"

namespace bagua {

// Names as a caller spells them: the MPI-side handles.
const char *dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "MPI_FLOAT";
    case DType::f64: return "MPI_DOUBLE";
    case DType::f16: return "BAGUA_FLOAT16";
    case DType::bf16: return "BAGUA_BFLOAT16";
  }
  return "?";
}

const char *op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "MPI_SUM";
    case ReduceOp::max: return "MPI_MAX";
    case ReduceOp::min: return "MPI_MIN";
    case ReduceOp::avg: return "BAGUA_AVG";
    case ReduceOp::prod: return "MPI_PROD";
  }
  return "?";
}

}  // namespace bagua
