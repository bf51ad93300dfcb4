#include "validate.hpp"

#include <string>

#include "../core/memory.hpp"
#include "../core/runtime.hpp"

namespace bagua {
namespace {

bool overlaps(const void *a, const void *b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return bytes > 0 && x < y + bytes && y < x + bytes;
}

}  // namespace

Status validate_reduction_any_memory(const char *fn, const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, ReductionCall *out) {
  BAGUA_TRY(runtime_ensure());
  if (count < 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: count %d is negative", fn, count);
  DType dtype;
  ReduceOp rop;
  const Status dts = dtype_from_mpi(datatype, &dtype);
  if (dts != BAGUA_SUCCESS)
    return fail(dts, "%s: %s", fn, std::string(last_error_message()).c_str());
  const Status ops = op_from_mpi(op, &rop);
  if (ops != BAGUA_SUCCESS)
    return fail(ops, "%s: %s", fn, std::string(last_error_message()).c_str());
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  if (count > 0 && recvbuf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: recvbuf is NULL with count %d", fn, count);
  if (count > 0 && !in_place && sendbuf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: sendbuf is NULL with count %d", fn, count);
  if (!in_place && overlaps(sendbuf, recvbuf, bytes))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: sendbuf and recvbuf overlap; pass MPI_IN_PLACE for in-place", fn);
  if (reinterpret_cast<uintptr_t>(recvbuf) % dtype_size(dtype) != 0 ||
      (!in_place && reinterpret_cast<uintptr_t>(sendbuf) % dtype_size(dtype) != 0))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: buffers must be aligned to %zu bytes (%s)", fn,
                dtype_size(dtype), dtype_name(dtype));
  *out = {in_place ? recvbuf : sendbuf, recvbuf, static_cast<size_t>(count), dtype, rop};
  return BAGUA_SUCCESS;
}

Status validate_reduction(const char *fn, const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, ReductionCall *out) {
  BAGUA_TRY(validate_reduction_any_memory(fn, sendbuf, recvbuf, count, datatype, op, out));
#if BAGUA_HAVE_CUDA
  if (is_device_pointer(out->src) || is_device_pointer(out->dst))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: CUDA device buffers are supported by bagua_allreduce_q8 and "
                "bagua_allreduce_fp16 only; pass host memory",
                fn);
#endif
  return BAGUA_SUCCESS;
}

Status validate_buffer(const char *fn, const void *buf, int count, MPI_Datatype datatype,
                       DType *out) {
  BAGUA_TRY(runtime_ensure());
  if (count < 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: count %d is negative", fn, count);
  if (count > 0 && buf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: buf is NULL with count %d", fn, count);
  if (dtype_from_mpi(datatype, out) != BAGUA_SUCCESS)
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "%s: datatype is not MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16", fn);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
