// C entry points of decentralized averaging: full precision with peer modes,
// and the low-precision ring state.
#include <cstring>

#include "../core/comm.hpp"
#include "../core/run.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"

struct bagua_lowprec_s {
  MPI_Comm comm;
  size_t count;
  bagua::DType dtype;
  int interval;
  long long calls = 0;
  bagua::LowprecReplicas replicas;
};

namespace bagua {
namespace {

Status validate_mode(bagua_peer_mode mode, PeerMode *out) {
  switch (static_cast<int>(mode)) {
    case BAGUA_PEER_ALL: *out = PeerMode::all; return BAGUA_SUCCESS;
    case BAGUA_PEER_SHIFT_ONE: *out = PeerMode::shift_one; return BAGUA_SUCCESS;
    case BAGUA_PEER_RING: *out = PeerMode::ring; return BAGUA_SUCCESS;
    default: break;
  }
  return fail(BAGUA_ERR_INVALID_ARGUMENT,
              "mode %d is not BAGUA_PEER_ALL, BAGUA_PEER_SHIFT_ONE or BAGUA_PEER_RING",
              static_cast<int>(mode));
}

Status validate_interval(int interval) {
  if (interval < 1) return fail(BAGUA_ERR_INVALID_ARGUMENT, "interval %d is < 1", interval);
  return BAGUA_SUCCESS;
}

// The communicator's state, usable.
Status usable_state(MPI_Comm comm, Communicator **out) {
  BAGUA_TRY(Communicator::get(comm, out));
  return (*out)->check_usable();
}

Status decentralized_average(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             bagua_peer_mode mode, int step, int interval, MPI_Comm comm) {
  BAGUA_TRY(runtime_ensure());  // before runtime_avg_op(), which needs it
  Call call;
  BAGUA_TRY(describe_reduction(Family::decentralized, Wire::exact, sendbuf, recvbuf, count,
                               datatype, runtime_avg_op(), comm, &call));
  PeerMode peer_mode = PeerMode::all;
  BAGUA_TRY(validate_mode(mode, &peer_mode));
  if (step < 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "step %d is negative", step);
  BAGUA_TRY(validate_interval(interval));
  Communicator *c = nullptr;
  BAGUA_TRY(usable_state(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  // A local step: no communication.
  if (step % interval != 0) {
    return copy_input_to_output(call);
  }
  return run_peer_average(*c, call, peer_mode, step / interval);
}

Status create_state(const void *buf, int count, MPI_Datatype datatype, int interval, MPI_Comm comm,
                    bagua_lowprec_t *state) {
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  *state = nullptr;
  Call call;
  BAGUA_TRY(describe_buffer(Family::lowprec, lowprec_wire().id, "buf", buf, count, datatype, comm,
                            &call));
  BAGUA_TRY(validate_interval(interval));
  Communicator *c = nullptr;
  BAGUA_TRY(usable_state(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  auto s = std::make_unique<bagua_lowprec_s>();
  s->comm = comm;
  s->count = call.count;
  s->dtype = call.dtype;
  s->interval = interval;
  BAGUA_TRY(run_lowprec_init(*c, call, &s->replicas));
  *state = s.release();
  return BAGUA_SUCCESS;
}

Status step_state(bagua_lowprec_t state, void *buf) {
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  Call call;
  BAGUA_TRY(describe_buffer(Family::lowprec, lowprec_wire().id, "buf", buf,
                            static_cast<int64_t>(state->count), datatype_to_mpi(state->dtype),
                            state->comm, &call));
  Communicator *c = nullptr;
  BAGUA_TRY(usable_state(state->comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  // A refused step (a non-finite input: run_lowprec_step) is not counted.
  if (state->calls % state->interval == 0) BAGUA_TRY(run_lowprec_step(*c, call, &state->replicas));
  ++state->calls;
  return BAGUA_SUCCESS;
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_decentralized_average(const void *sendbuf, void *recvbuf, int count,
                                           MPI_Datatype datatype, bagua_peer_mode mode, int step,
                                           int interval, MPI_Comm comm) {
  return bagua::guard("bagua_decentralized_average", [&] {
    return bagua::decentralized_average(sendbuf, recvbuf, count, datatype, mode, step, interval,
                                        comm);
  });
}

extern "C" int bagua_lowprec_create(const void *buf, int count, MPI_Datatype datatype, int interval,
                                    MPI_Comm comm, bagua_lowprec_t *state) {
  return bagua::guard("bagua_lowprec_create", [&] {
    return bagua::create_state(buf, count, datatype, interval, comm, state);
  });
}

extern "C" int bagua_lowprec_step(bagua_lowprec_t state, void *buf) {
  return bagua::guard("bagua_lowprec_step", [&] { return bagua::step_state(state, buf); });
}

extern "C" int bagua_lowprec_replicas(bagua_lowprec_t state, const float **self, const float **left,
                                      const float **right) {
  return bagua::guard("bagua_lowprec_replicas", [&] {
    if (state == nullptr) return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
    if (self != nullptr) *self = state->replicas.self.data();
    if (left != nullptr) *left = state->replicas.left.data();
    if (right != nullptr) *right = state->replicas.right.data();
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_lowprec_destroy(bagua_lowprec_t *state) {
  return bagua::guard("bagua_lowprec_destroy", [&] {
    if (state != nullptr) {
      delete *state;
      *state = nullptr;
    }
    return BAGUA_SUCCESS;
  });
}
