#pragma once

#include <mpi.h>

#include "transport.hpp"

namespace bagua {

// Point-to-point over MPI on `comm`, which the caller has duplicated so user
// traffic never matches ours; the caller keeps ownership of `comm`.
Status mpi_transport_create(MPI_Comm comm, std::unique_ptr<Transport> *out);

}  // namespace bagua
