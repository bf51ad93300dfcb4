// C entry points of the nonblocking allreduce of every wire (bagua_iallreduce,
// bagua_iallreduce_alg, bagua_iallreduce_ex; the named wrappers are in
// named.cpp).
#include "../core/nonblocking.hpp"

#include "compressed.hpp"
#include "entry.hpp"
#include "guard.hpp"

namespace bagua {

Status start_nonblocking(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, bagua_sign_state_t state,
                         Completion done, MPI_Request *request) {
  if (request == nullptr && done.fn == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "request is NULL");
  if (request != nullptr) *request = MPI_REQUEST_NULL;
  Call call;
  BAGUA_TRY(describe_reduction(Family::iallreduce, wire, sendbuf, recvbuf, count, datatype, op,
                               comm, &call));
  if (wire_info(wire).error_feedback) BAGUA_TRY(attach_sign_state(state, &call));
  NonblockingComm *c = nullptr;
  Status s = NonblockingComm::get(comm, &c);
  if (s == BAGUA_SUCCESS) s = c->start(call, done, request);
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
  return start_nonblocking(wire, sendbuf, recvbuf, count, datatype, op, comm, nullptr, {}, request);
}

// The options of bagua_iallreduce_ex, checked.
Status start_ex(const void *sendbuf, void *recvbuf, int64_t count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, const bagua_iallreduce_params *params, MPI_Request *request) {
  if (params == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "params is NULL");
  if (params->struct_size != sizeof(bagua_iallreduce_params))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "params->struct_size is %zu, not sizeof(bagua_iallreduce_params) = %zu; "
                "initialise it with BAGUA_IALLREDUCE_PARAMS_INITIALIZER",
                params->struct_size, sizeof(bagua_iallreduce_params));
  Wire wire = Wire::exact;
  BAGUA_TRY(wire_from_c(params->algorithm, &wire));
  if (params->state != nullptr && !wire_info(wire).error_feedback)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "params->state is set but the %s algorithm keeps none",
                wire_name(wire));
  return start_nonblocking(wire, sendbuf, recvbuf, count, datatype, op, comm, params->state,
                           {params->complete, params->complete_arg}, request);
}

}  // namespace

}  // namespace bagua

extern "C" int bagua_iallreduce(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request) {
  return bagua::guard("bagua_iallreduce", [&] {
    return bagua::start_nonblocking(bagua::Wire::exact, sendbuf, recvbuf, count, datatype, op, comm,
                                    nullptr, {}, request);
  });
}

extern "C" int bagua_iallreduce_alg(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_algorithm algorithm, MPI_Request *request) {
  return bagua::guard("bagua_iallreduce_alg", [&] {
    return bagua::start_with(algorithm, sendbuf, recvbuf, count, datatype, op, comm, request);
  });
}

extern "C" int bagua_iallreduce_ex(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   const bagua_iallreduce_params *params, MPI_Request *request) {
  return bagua::guard("bagua_iallreduce_ex", [&] {
    return bagua::start_ex(sendbuf, recvbuf, count, datatype, op, comm, params, request);
  });
}
