#pragma once

#include <mpi.h>

#include "transport.hpp"

namespace bagua {

// Point-to-point over a UCP worker of its own; worker addresses are exchanged
// with an allgather on `comm` (collective, bounded by `timeout_ms`). Returns
// BAGUA_ERR_NOT_AVAILABLE when bagua was built without UCX.
Status ucx_transport_create(MPI_Comm comm, int64_t timeout_ms, std::unique_ptr<Transport> *out);

}  // namespace bagua
