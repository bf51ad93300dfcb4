// C entry points of communicators formed without an MPI launcher.
#include "../core/comm.hpp"
#include "../core/exchange.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"

namespace bagua {
namespace {

Status check_oob(const bagua_oob *oob) {
  if (oob == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "oob is NULL");
  if (oob->struct_size != sizeof(bagua_oob))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "oob->struct_size is %zu, not sizeof(bagua_oob) = %zu; initialise it with "
                "BAGUA_OOB_INITIALIZER",
                oob->struct_size, sizeof(bagua_oob));
  if (oob->size < 1) return fail(BAGUA_ERR_INVALID_ARGUMENT, "oob->size %d is < 1", oob->size);
  if (oob->rank < 0 || oob->rank >= oob->size)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "oob->rank %d is outside [0, %d)", oob->rank,
                oob->size);
  if (oob->allgather == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "oob->allgather is NULL");
  return BAGUA_SUCCESS;
}

Status comm_create_oob(const bagua_oob *oob, MPI_Comm *comm) {
  if (comm == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is NULL");
  *comm = MPI_COMM_NULL;
  BAGUA_TRY(check_oob(oob));
  BAGUA_TRY(runtime_ensure());
  OobExchange exchange(*oob);
  return Communicator::create_oob(exchange, comm);
}

Status comm_free(MPI_Comm *comm) {
  if (comm == nullptr) return BAGUA_SUCCESS;
  BAGUA_TRY(check_mpi_initialized());
  return Communicator::free_oob(comm);
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_comm_create_oob(const bagua_oob *oob, MPI_Comm *comm) {
  return bagua::guard("bagua_comm_create_oob", [&] { return bagua::comm_create_oob(oob, comm); });
}

extern "C" int bagua_comm_free(MPI_Comm *comm) {
  return bagua::guard("bagua_comm_free", [&] { return bagua::comm_free(comm); });
}
