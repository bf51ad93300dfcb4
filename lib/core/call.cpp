#include "call.hpp"

#include <cstdint>

#include "../mc/cuda_stream.hpp"
#include "../mc/memory.hpp"
#include "runtime.hpp"
#include "support.hpp"

namespace bagua {
namespace {

bool overlaps(const void *a, const void *b, size_t bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return bytes > 0 && x < y + bytes && y < x + bytes;
}

bool aligned(const void *p, DType t) { return reinterpret_cast<uintptr_t>(p) % dtype_size(t) == 0; }

Status check_count(int64_t count) {
  if (count < 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "count %lld is negative",
                static_cast<long long>(count));
  return BAGUA_SUCCESS;
}

// The buffer checks of a reduction with count > 0 (count 0 accepts any
// pointer, as MPI does; any alignment is accepted, as MPI does).
Status check_reduction_buffers(const void *sendbuf, void *recvbuf, size_t count, DType t) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (recvbuf == MPI_IN_PLACE)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "recvbuf is MPI_IN_PLACE; pass MPI_IN_PLACE as sendbuf for an in-place call");
  if (recvbuf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is NULL with count %zu", count);
  if (!in_place && sendbuf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL with count %zu", count);
  if (!in_place && overlaps(sendbuf, recvbuf, count * dtype_size(t)))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "sendbuf and recvbuf overlap; pass MPI_IN_PLACE for in-place");
  // Misaligned buffers are fine: the run path stages them (with_aligned_buffers).
  return BAGUA_SUCCESS;
}

// Both buffers of a call live in the same memory type.
Status resolve_memory(const void *src, const void *dst, Memory *out) {
  const Memory a = memory_type_of(src), b = memory_type_of(dst);
  if (a != b)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "sendbuf is in %s memory but recvbuf in %s memory; both must be host buffers or "
                "both CUDA device buffers",
                a == Memory::cuda ? "CUDA device" : "host",
                b == Memory::cuda ? "CUDA device" : "host");
  *out = a;
  return BAGUA_SUCCESS;
}

}  // namespace

Status describe_reduction(Family family, Wire wire, const void *sendbuf, void *recvbuf,
                          int64_t count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          Call *out) {
  BAGUA_TRY(runtime_ensure());
  BAGUA_TRY(check_count(count));
  DType dtype;
  ReduceOp rop;
  BAGUA_TRY(dtype_from_mpi(datatype, &dtype));
  BAGUA_TRY(op_from_mpi(op, &rop));
  const auto n = static_cast<size_t>(count);
  const void *src = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  Memory memory = Memory::host;
  if (n > 0) {
    BAGUA_TRY(check_reduction_buffers(sendbuf, recvbuf, n, dtype));
    BAGUA_TRY(resolve_memory(src, recvbuf, &memory));
  }
  *out = Call{family, wire, src, recvbuf, n, dtype, rop, memory, nullptr, comm};
  return check_support(family, wire, dtype, rop, memory);
}

Status describe_buffer(Family family, Wire wire, const char *name, const void *buf, int64_t count,
                       MPI_Datatype datatype, MPI_Comm comm, Call *out) {
  BAGUA_TRY(runtime_ensure());
  BAGUA_TRY(check_count(count));
  DType dtype;
  BAGUA_TRY(dtype_from_mpi(datatype, &dtype));
  const auto n = static_cast<size_t>(count);
  Memory memory = Memory::host;
  if (n > 0) {
    if (buf == nullptr)
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s is NULL with count %zu", name, n);
    if (!aligned(buf, dtype))
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s must be aligned to %zu bytes (the size of %s)",
                  name, dtype_size(dtype), dtype_name(dtype));
    memory = memory_type_of(buf);
  }
  *out = Call{family, wire,    buf, const_cast<void *>(buf), n, dtype, ReduceOp::avg,
              memory, nullptr, comm};
  return check_support(family, wire, dtype, ReduceOp::avg, memory);
}

void set_device_stream(MPI_Comm comm, void *stream) { set_cuda_stream(comm, stream); }

}  // namespace bagua
