// The named entry points of the wires (bagua_allreduce_q8, ...): thin
// wrappers of bagua_allreduce_alg and bagua_iallreduce_alg's paths, kept for
// callers that name a wire at compile time. A wire of the registry needs none.
#include "entry.hpp"
#include "guard.hpp"

namespace {

bagua::Wire wire_of(bagua_algorithm a) { return static_cast<bagua::Wire>(a); }

}  // namespace

// Each blocking allreduce and its large-count twin: one body, two C signatures.
#define BAGUA_DEFINE_ALLREDUCE(name, algorithm)                                                \
  extern "C" int name(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,    \
                      MPI_Op op, MPI_Comm comm) {                                              \
    return bagua::guard(#name, [&] {                                                           \
      return bagua::allreduce(wire_of(algorithm), sendbuf, recvbuf, count, datatype, op, comm, \
                              nullptr);                                                        \
    });                                                                                        \
  }                                                                                            \
  extern "C" int name##_c(const void *sendbuf, void *recvbuf, MPI_Count count,                 \
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {                   \
    return bagua::guard(#name "_c", [&] {                                                      \
      return bagua::allreduce(wire_of(algorithm), sendbuf, recvbuf, count, datatype, op, comm, \
                              nullptr);                                                        \
    });                                                                                        \
  }

#define BAGUA_DEFINE_IALLREDUCE(name, algorithm)                                                 \
  extern "C" int name(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,      \
                      MPI_Op op, MPI_Comm comm, MPI_Request *request) {                          \
    return bagua::guard(#name, [&] {                                                             \
      return bagua::start_nonblocking(wire_of(algorithm), sendbuf, recvbuf, count, datatype, op, \
                                      comm, nullptr, {}, request);                               \
    });                                                                                          \
  }

BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_q8, BAGUA_ALGORITHM_Q8)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_q4, BAGUA_ALGORITHM_Q4)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_fp16, BAGUA_ALGORITHM_FP16)
BAGUA_DEFINE_ALLREDUCE(bagua_allreduce_bf16, BAGUA_ALGORITHM_BF16)

BAGUA_DEFINE_IALLREDUCE(bagua_iallreduce_q8, BAGUA_ALGORITHM_Q8)
BAGUA_DEFINE_IALLREDUCE(bagua_iallreduce_q4, BAGUA_ALGORITHM_Q4)
BAGUA_DEFINE_IALLREDUCE(bagua_iallreduce_fp16, BAGUA_ALGORITHM_FP16)
BAGUA_DEFINE_IALLREDUCE(bagua_iallreduce_bf16, BAGUA_ALGORITHM_BF16)

extern "C" int bagua_allreduce_sign(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_sign_state_t state) {
  return bagua::guard("bagua_allreduce_sign", [&] {
    return bagua::allreduce(wire_of(BAGUA_ALGORITHM_SIGN), sendbuf, recvbuf, count, datatype, op,
                            comm, state);
  });
}

extern "C" int bagua_iallreduce_sign(const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     bagua_sign_state_t state, MPI_Request *request) {
  return bagua::guard("bagua_iallreduce_sign", [&] {
    return bagua::start_nonblocking(wire_of(BAGUA_ALGORITHM_SIGN), sendbuf, recvbuf, count,
                                    datatype, op, comm, state, {}, request);
  });
}
