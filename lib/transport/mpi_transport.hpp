#pragma once

#include <mpi.h>

#include "transport.hpp"

namespace bagua {

// The smallest MPI_TAG_UB the MPI standard allows; bagua's tag layout fits it.
constexpr Tag kMinTagUb = 32767;

// Point-to-point over MPI on `comm`, which the caller has duplicated so user
// traffic never matches ours; the caller keeps ownership of `comm`.
Status mpi_transport_create(MPI_Comm comm, std::unique_ptr<Transport> *out);

}  // namespace bagua
