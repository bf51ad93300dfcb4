// The CUDA stream each communicator's device-buffer calls run on, set with
// bagua_set_cuda_stream. Kept apart from Communicator: it is an opaque
// cudaStream_t (void *), nullptr for the default stream.
#pragma once

#include <mpi.h>

namespace bagua {

// Records `stream` for comm (nullptr = default stream). Thread-safe.
void set_cuda_stream(MPI_Comm comm, void *stream);
// The stream recorded for comm, nullptr when none was set. Thread-safe.
void *cuda_stream_of(MPI_Comm comm);

}  // namespace bagua
