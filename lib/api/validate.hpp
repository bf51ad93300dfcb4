// Argument checks shared by the C entry points: each failure names the
// argument and the rule it broke.
#pragma once

#include <mpi.h>

#include "../base/dtype.hpp"
#include "../base/status.hpp"

namespace bagua {

// A reduction call's arguments, resolved: src is sendbuf or, for MPI_IN_PLACE,
// recvbuf.
struct ReductionCall {
  const void *src;
  void *dst;
  size_t count;
  DType dtype;
  ReduceOp op;
};

// Checks buffers (NULL, aliasing, in-place, host memory), count, datatype and op.
Status validate_reduction(const char *fn, const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype datatype, MPI_Op op, ReductionCall *out);
// The same checks, CUDA device buffers allowed (for calls that handle them).
Status validate_reduction_any_memory(const char *fn, const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, ReductionCall *out);

// Checks a single buffer that a state object will keep using: count >= 0,
// buf non-NULL when count > 0, and a supported datatype.
Status validate_buffer(const char *fn, const void *buf, int count, MPI_Datatype datatype,
                       DType *out);

}  // namespace bagua
