// C entry points of the nonblocking allreduce of every wire (bagua_iallreduce,
// bagua_iallreduce_alg; the named wrappers are in named.cpp).
#include "../core/nonblocking.hpp"

#include "compressed.hpp"
#include "entry.hpp"
#include "guard.hpp"

namespace bagua {

Status start_nonblocking(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, bagua_sign_state_t state,
                         MPI_Request *request) {
  if (request == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "request is NULL");
  *request = MPI_REQUEST_NULL;
  Call call;
  BAGUA_TRY(describe_reduction(Family::iallreduce, wire, sendbuf, recvbuf, count, datatype, op,
                               comm, &call));
  if (wire_info(wire).error_feedback) BAGUA_TRY(attach_sign_state(state, &call));
  NonblockingComm *c = nullptr;
  Status s = NonblockingComm::get(comm, &c);
  if (s == BAGUA_SUCCESS) s = c->start(call, request);
  // A started call's task releases its state.
  if (s != BAGUA_SUCCESS && call.feedback != nullptr) call.feedback->release();
  return s;
}

namespace {

// A run-time algorithm's nonblocking path; a wire with error feedback needs
// its state.
Status start_with(bagua_algorithm algorithm, const void *sendbuf, void *recvbuf, int64_t count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  Wire wire = Wire::exact;
  BAGUA_TRY(stateless_wire_from_c(algorithm, "bagua_iallreduce", &wire));
  return start_nonblocking(wire, sendbuf, recvbuf, count, datatype, op, comm, nullptr, request);
}

}  // namespace

}  // namespace bagua

extern "C" int bagua_iallreduce(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request) {
  return bagua::guard("bagua_iallreduce", [&] {
    return bagua::start_nonblocking(bagua::Wire::exact, sendbuf, recvbuf, count, datatype, op, comm,
                                    nullptr, request);
  });
}

extern "C" int bagua_iallreduce_alg(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_algorithm algorithm, MPI_Request *request) {
  return bagua::guard("bagua_iallreduce_alg", [&] {
    return bagua::start_with(algorithm, sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}
