// C entry points of the blocking allreduces (exact and compressed), their
// large-count variants, and bagua_allreduce_bytes. Each is: describe the
// call, check it against the support matrix, run it (core/run.hpp).
#include <climits>
#include <cstring>
#include <string>

#include "../core/comm.hpp"
#include "../core/run.hpp"
#include "../core/runtime.hpp"
#include "compressed.hpp"
#include "guard.hpp"

namespace bagua {
namespace {

Status allreduce(Wire wire, const void *sendbuf, void *recvbuf, int64_t count,
                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                 bagua_sign_state_t state = nullptr) {
  Call call;
  BAGUA_TRY(describe_reduction(Family::allreduce, wire, sendbuf, recvbuf, count, datatype, op, comm,
                               &call));
  if (wire == Wire::sign) BAGUA_TRY(attach_sign_state(state, &call));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  BAGUA_TRY(c->check_usable());
  return run_blocking(*c, call);
}

Status wire_from_c(bagua_algorithm algorithm, Wire *out) {
  // Read as an int: a C caller may pass any value.
  const int value = static_cast<int>(algorithm);
  if (value < 0 || value >= kWires)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "algorithm %d is not a bagua_algorithm", value);
  *out = static_cast<Wire>(value);
  return BAGUA_SUCCESS;
}

// The wire named `name` (the wire list's names, exactly).
Status wire_from_name(const char *name, bagua_algorithm *out) {
  if (name == nullptr || out == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s is NULL", name == nullptr ? "name" : "out");
  std::string names;
  for (int w = 0; w < kWires; ++w) {
    const char *known = wire_name(static_cast<Wire>(w));
    if (std::strcmp(name, known) == 0) {
      *out = static_cast<bagua_algorithm>(w);
      return BAGUA_SUCCESS;
    }
    names += (w > 0 ? ", " : "") + std::string(known);
  }
  return fail(BAGUA_ERR_INVALID_ARGUMENT, "unknown algorithm \"%s\"; the names are %s", name,
              names.c_str());
}

// The named entry points' path for a run-time algorithm; sign needs its state.
Status allreduce_with(bagua_algorithm algorithm, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  Wire wire = Wire::exact;
  BAGUA_TRY(wire_from_c(algorithm, &wire));
  if (wire == Wire::sign)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "the sign algorithm needs its error-feedback state; call bagua_allreduce_sign");
  return allreduce(wire, sendbuf, recvbuf, count, datatype, op, comm);
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

// Each allreduce and its large-count twin: one body, two C signatures.
#define BAGUA_DEFINE_ALLREDUCE(name, wire)                                                  \
  extern "C" int name(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, \
                      MPI_Op op, MPI_Comm comm) {                                           \
    return bagua::guard(#name, [&] {                                                        \
      return bagua::allreduce(wire, sendbuf, recvbuf, count, datatype, op, comm);           \
    });                                                                                     \
  }                                                                                         \
  extern "C" int name##_c(const void *sendbuf, void *recvbuf, MPI_Count count,              \
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {                \
    return bagua::guard(#name "_c", [&] {                                                   \
      return bagua::allreduce(wire, sendbuf, recvbuf, count, datatype, op, comm);           \
    });                                                                                     \
  }

BAGUA_DEFINE_ALLREDUCE(bagua_allreduce, bagua::Wire::exact)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_q8, bagua::Wire::q8)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_q4, bagua::Wire::q4)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_fp16, bagua::Wire::fp16)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_bf16, bagua::Wire::bf16)

extern "C" int bagua_allreduce_sign(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_sign_state_t state) {
  return bagua::guard("bagua_allreduce_sign", [&] {
    return bagua::allreduce(bagua::Wire::sign, sendbuf, recvbuf, count, datatype, op, comm, state);
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
  if (value < 0 || value >= bagua::kWires) return nullptr;
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
