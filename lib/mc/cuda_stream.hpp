// The CUDA stream each communicator's device-buffer calls run on, set with
// bagua_set_cuda_stream: an attribute of the communicator (local to set, and
// gone when MPI frees it), an opaque cudaStream_t (void *), nullptr for the
// default stream.
#pragma once

#include <mpi.h>

namespace bagua {

// Records `stream` for comm (nullptr = default stream). Thread-safe under
// MPI_THREAD_MULTIPLE.
void set_cuda_stream(MPI_Comm comm, void *stream);
// The stream recorded for comm, nullptr when none was set (or comm is
// MPI_COMM_NULL).
void *cuda_stream_of(MPI_Comm comm);

}  // namespace bagua
