// What the C entry points of several files share: the wire of a
// bagua_algorithm argument, and the paths of the blocking and nonblocking
// allreduces of any wire (named.cpp's wrappers call them).
#pragma once

#include <mpi.h>

#include "../core/call.hpp"
#include "../core/nonblocking.hpp"
#include "bagua.h"

namespace bagua {

// The wire of a C caller's algorithm value (any int); an error names it.
Status wire_from_c(bagua_algorithm algorithm, Wire *out);
// The same for a call that takes no state: a wire with error feedback is
// refused, pointing to its named call (`call` "bagua_allreduce": "bagua_allreduce_sign").
Status stateless_wire_from_c(bagua_algorithm algorithm, const char *call, Wire *out);

// The blocking allreduce of `wire`; `state` is the error-feedback state of
// a wire that has one (nullptr otherwise).
Status allreduce(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, bagua_sign_state_t state);

// Starts the nonblocking allreduce of `wire`; `state` as allreduce's, held
// by the call until it has run; `done` called when it has (then request may
// be nullptr).
Status start_nonblocking(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, bagua_sign_state_t state,
                         Completion done, MPI_Request *request);

}  // namespace bagua
