// Process-wide MPI handles of the library (float16/bfloat16 datatypes, the
// averaging op, the attribute keyval) and the registry of live communicator
// states; all released by bagua_finalize or by a hook that runs at
// MPI_Finalize.
#pragma once

#include <mpi.h>

#include "../base/dtype.hpp"
#include "../base/status.hpp"

namespace bagua {

class Communicator;

// Creates the handles on first call (needs MPI initialised). Thread-safe.
Status runtime_ensure();

MPI_Datatype runtime_float16();
MPI_Datatype runtime_bfloat16();
MPI_Op runtime_avg_op();
int runtime_comm_keyval();

// A communicator whose setup collective timed out (lib/core/bounded.hpp) is
// marked, and later bagua calls on it return BAGUA_ERR_COMM_BROKEN naming the
// first failure instead of pairing with a late peer's setup.
void runtime_mark_setup_failed(MPI_Comm user_comm, const char *message);
Status runtime_check_setup_usable(MPI_Comm user_comm);

// Maps a user's MPI handles to the library's enums.
Status dtype_from_mpi(MPI_Datatype datatype, DType *out);
Status op_from_mpi(MPI_Op op, ReduceOp *out);
// The MPI handle of an element type (after runtime_ensure).
MPI_Datatype datatype_to_mpi(DType t);

// Live communicator states (each an attribute of `user_comm`), destroyed at
// MPI_Finalize if the user never freed their communicators.
void registry_add(Communicator *c, MPI_Comm user_comm);
// Removes `c`; false if it was not registered (already destroyed).
bool registry_remove(Communicator *c);

// bagua_finalize: destroys every live state as if its communicator were
// freed (joining the threads it runs), then releases the handles as
// MPI_Finalize would; the next bagua call starts afresh.
Status runtime_finalize();

}  // namespace bagua
