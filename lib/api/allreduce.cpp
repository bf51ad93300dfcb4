// C entry points of the blocking allreduce of every wire (bagua_allreduce,
// bagua_allreduce_alg; the named wrappers are in named.cpp), their
// large-count variants, the wire names, and the sizing calls. Each is:
// describe the call, check it against the support matrix, run it
// (core/run.hpp).
#include <climits>
#include <cstring>
#include <string>

#include "../core/comm.hpp"
#include "../core/run.hpp"
#include "../core/runtime.hpp"
#include "compressed.hpp"
#include "entry.hpp"
#include "guard.hpp"

namespace bagua {

Status wire_from_c(bagua_algorithm algorithm, Wire *out) {
  // Read as an int: a C caller may pass any value.
  const int value = static_cast<int>(algorithm);
  if (!wire_valid(value))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "algorithm %d is not a bagua_algorithm", value);
  *out = static_cast<Wire>(value);
  return BAGUA_SUCCESS;
}

Status stateless_wire_from_c(bagua_algorithm algorithm, const char *call, Wire *out) {
  BAGUA_TRY(wire_from_c(algorithm, out));
  if (wire_info(*out).error_feedback)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "the %s algorithm needs its error-feedback state; call %s_%s", wire_name(*out),
                call, wire_name(*out));
  return BAGUA_SUCCESS;
}

Status allreduce(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, bagua_sign_state_t state) {
  Call call;
  BAGUA_TRY(describe_reduction(Family::allreduce, wire, sendbuf, recvbuf, count, datatype, op, comm,
                               &call));
  if (wire_info(wire).error_feedback) BAGUA_TRY(attach_sign_state(state, &call));
  const FeedbackRelease release(call);
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  BAGUA_TRY(c->check_usable());
  return run_blocking(*c, call);
}

namespace {

// The wire named `name` (the wire list's names, exactly).
Status wire_from_name(const char *name, bagua_algorithm *out) {
  if (name == nullptr || out == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s is NULL", name == nullptr ? "name" : "out");
  if (const WireInfo *w = wire_named(name)) {
    *out = static_cast<bagua_algorithm>(w->id);
    return BAGUA_SUCCESS;
  }
  std::string names;
  for (const WireInfo &w : wires()) names += (names.empty() ? "" : ", ") + std::string(w.name);
  return fail(BAGUA_ERR_INVALID_ARGUMENT, "unknown algorithm \"%s\"; the names are %s", name,
              names.c_str());
}

// A run-time algorithm's path; a wire with error feedback needs its state.
Status allreduce_with(bagua_algorithm algorithm, const void *sendbuf, void *recvbuf, int64_t count,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Wire wire = Wire::exact;
  BAGUA_TRY(stateless_wire_from_c(algorithm, "bagua_allreduce", &wire));
  return allreduce(wire, sendbuf, recvbuf, count, datatype, op, comm, nullptr);
}

// A call of `count` elements to size (no buffers), with this process's options.
Status sizing_call(bagua_algorithm algorithm, MPI_Count count, MPI_Datatype datatype,
                   MPI_Count *bytes, Call *call, Options *options) {
  BAGUA_TRY(runtime_ensure());
  if (bytes == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "bytes is NULL");
  if (count < 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "count %lld is negative",
                static_cast<long long>(count));
  *call = Call{};
  BAGUA_TRY(wire_from_c(algorithm, &call->wire));
  BAGUA_TRY(dtype_from_mpi(datatype, &call->dtype));
  call->count = static_cast<size_t>(count);
  return options_load(options);
}

Status encoded_bytes(bagua_algorithm algorithm, MPI_Count count, MPI_Datatype datatype,
                     MPI_Count *bytes) {
  Call call;
  Options options;
  BAGUA_TRY(sizing_call(algorithm, count, datatype, bytes, &call, &options));
  size_t size = 0;
  BAGUA_TRY(message_bytes(call, options, &size));
  *bytes = static_cast<MPI_Count>(size);
  return BAGUA_SUCCESS;
}

Status allreduce_bytes(bagua_algorithm algorithm, MPI_Count count, MPI_Datatype datatype,
                       MPI_Comm comm, MPI_Count *bytes) {
  Call call;
  Options options;
  BAGUA_TRY(sizing_call(algorithm, count, datatype, bytes, &call, &options));
  if (comm == MPI_COMM_NULL) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
  // The ranks of comm's state where it has one (bagua_comm_create_oob's
  // handles always do), else of comm.
  int rank = 0, size = 1;
  const Communicator *c = Communicator::find(comm);
  if (c != nullptr) {
    rank = c->rank();
    size = c->size();
  } else {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
  }
  size_t sent = 0;
  BAGUA_TRY(flat_bytes_sent(call, rank, size, options, &sent));
  *bytes = static_cast<MPI_Count>(sent);
  return BAGUA_SUCCESS;
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_allreduce", [&] {
    return bagua::allreduce(bagua::Wire::exact, sendbuf, recvbuf, count, datatype, op, comm,
                            nullptr);
  });
}

extern "C" int bagua_allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_allreduce_c", [&] {
    return bagua::allreduce(bagua::Wire::exact, sendbuf, recvbuf, count, datatype, op, comm,
                            nullptr);
  });
}

extern "C" int bagua_encoded_bytes(bagua_algorithm algorithm, MPI_Count count,
                                   MPI_Datatype datatype, MPI_Count *bytes) {
  return bagua::guard("bagua_encoded_bytes",
                      [&] { return bagua::encoded_bytes(algorithm, count, datatype, bytes); });
}

extern "C" int bagua_allreduce_bytes(bagua_algorithm algorithm, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Comm comm, MPI_Count *bytes) {
  return bagua::guard("bagua_allreduce_bytes", [&] {
    return bagua::allreduce_bytes(algorithm, count, datatype, comm, bytes);
  });
}

extern "C" const char *bagua_algorithm_name(bagua_algorithm algorithm) {
  // Read as an int, as wire_from_c does, without setting the last error.
  const int value = static_cast<int>(algorithm);
  if (!bagua::wire_valid(value)) return nullptr;
  return bagua::wire_name(static_cast<bagua::Wire>(value));
}

extern "C" int bagua_algorithm_from_name(const char *name, bagua_algorithm *out) {
  return bagua::guard("bagua_algorithm_from_name",
                      [&] { return bagua::wire_from_name(name, out); });
}

extern "C" int bagua_allreduce_alg(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   bagua_algorithm algorithm) {
  return bagua::guard("bagua_allreduce_alg", [&] {
    return bagua::allreduce_with(algorithm, sendbuf, recvbuf, count, datatype, op, comm);
  });
}

extern "C" int bagua_allreduce_alg_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     bagua_algorithm algorithm) {
  return bagua::guard("bagua_allreduce_alg_c", [&] {
    return bagua::allreduce_with(algorithm, sendbuf, recvbuf, count, datatype, op, comm);
  });
}

extern "C" int bagua_algorithm_offered(bagua_algorithm algorithm, const char *family) {
  const int value = static_cast<int>(algorithm);
  if (!bagua::wire_valid(value) || family == nullptr) return 0;
  for (int f = 0; f < bagua::kFamilies; ++f)
    if (std::strcmp(bagua::family_name(bagua::Family(f)), family) == 0)
      return bagua::offers(bagua::Family(f), bagua::Wire(value)) ? 1 : 0;
  return 0;
}

extern "C" int bagua_algorithm_has_state(bagua_algorithm algorithm) {
  const int value = static_cast<int>(algorithm);
  if (!bagua::wire_valid(value)) return 0;
  return bagua::wire_info(bagua::Wire(value)).error_feedback ? 1 : 0;
}
