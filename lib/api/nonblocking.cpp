// C entry points of the nonblocking allreduce of every wire (bagua_iallreduce,
// bagua_iallreduce_alg; the named wrappers are in named.cpp).
#include "../core/nonblocking.hpp"

#include "entry.hpp"
#include "guard.hpp"

namespace bagua {

Status start_nonblocking(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  if (request == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "request is NULL");
  *request = MPI_REQUEST_NULL;
  Call call;
  BAGUA_TRY(describe_reduction(Family::iallreduce, wire, sendbuf, recvbuf, count, datatype, op,
                               comm, &call));
  NonblockingComm *c = nullptr;
  BAGUA_TRY(NonblockingComm::get(comm, &c));
  return c->start(call, request);
}

}  // namespace bagua

extern "C" int bagua_iallreduce(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request) {
  return bagua::guard("bagua_iallreduce", [&] {
    return bagua::start_nonblocking(bagua::Wire::exact, sendbuf, recvbuf, count, datatype, op, comm,
                                    request);
  });
}

extern "C" int bagua_iallreduce_alg(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_algorithm algorithm, MPI_Request *request) {
  return bagua::guard("bagua_iallreduce_alg", [&] {
    bagua::Wire wire = bagua::Wire::exact;
    BAGUA_TRY(bagua::wire_from_c(algorithm, &wire));
    return bagua::start_nonblocking(wire, sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}
