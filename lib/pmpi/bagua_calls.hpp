// Routed calls, made with bagua's public C API only (include/bagua.h).
#pragma once

#include <mpi.h>

#include "route.hpp"

namespace bagua::pmpi {

// "bagua_allreduce_alg", "bagua_iallreduce_alg", ...: the function a routed call uses.
const char *bagua_function(Mode mode, CallKind call);

// Runs MPI_Allreduce's arguments through the mode's bagua function; `type`
// is the routing class of `datatype`. Returns a bagua status.
int run_blocking(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type,
                 MPI_Op op, MPI_Comm comm);

// As run_blocking for MPI_Iallreduce (modes with a nonblocking call); *request
// completes as an MPI request. Returns a bagua status.
int run_nonblocking(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type,
                    MPI_Op op, MPI_Comm comm, MPI_Request *request);

}  // namespace bagua::pmpi
