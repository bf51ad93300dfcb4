// C entry points of decentralized averaging: full precision with peer modes,
// and the low-precision ring state.
#include "../algo/decentralized.hpp"

#include <cstring>

#include "../core/comm.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"
#include "validate.hpp"

struct bagua_lowprec_s {
  MPI_Comm comm;
  size_t count;
  bagua::DType dtype;
  int interval;
  long long calls = 0;
  bool broken = false;
  bagua::LowprecReplicas replicas;
};

namespace bagua {
namespace {

Status validate_mode(const char *fn, bagua_peer_mode mode, PeerMode *out) {
  switch (mode) {
    case BAGUA_PEER_ALL: *out = PeerMode::all; return BAGUA_SUCCESS;
    case BAGUA_PEER_SHIFT_ONE: *out = PeerMode::shift_one; return BAGUA_SUCCESS;
    case BAGUA_PEER_RING: *out = PeerMode::ring; return BAGUA_SUCCESS;
    default: break;
  }
  return fail(BAGUA_ERR_INVALID_ARGUMENT,
              "%s: mode %d is not BAGUA_PEER_ALL, BAGUA_PEER_SHIFT_ONE or BAGUA_PEER_RING", fn,
              static_cast<int>(mode));
}

Status validate_interval(const char *fn, int interval) {
  if (interval < 1) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: interval %d is < 1", fn, interval);
  return BAGUA_SUCCESS;
}

// The exact average over all ranks, with bagua_allreduce's choice of algorithm.
Status average_all(Communicator &comm, AlgoContext &ctx, const ReductionCall &call) {
  const AllreduceArgs args{call.src, call.dst, call.count, call.dtype, ReduceOp::avg};
  AllreduceAlgo algo = comm.options().allreduce_algo;
  if (algo == AllreduceAlgo::automatic)
    algo = call.count * dtype_size(call.dtype) >= comm.options().ring_threshold_bytes
               ? AllreduceAlgo::ring
               : AllreduceAlgo::recursive_doubling;
  return algo == AllreduceAlgo::ring ? allreduce_ring(ctx, args)
                                     : allreduce_recursive_doubling(ctx, args);
}

Status decentralized_average(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             bagua_peer_mode mode, int step, int interval, MPI_Comm comm) {
  const char *fn = "bagua_decentralized_average";
  ReductionCall call;
  // The op is fixed (a sum), so only the buffer, count and datatype checks can fail.
  BAGUA_TRY(validate_reduction(fn, sendbuf, recvbuf, count, datatype, MPI_SUM, &call));
  PeerMode peer_mode = PeerMode::all;
  BAGUA_TRY(validate_mode(fn, mode, &peer_mode));
  if (step < 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: step %d is negative", fn, step);
  BAGUA_TRY(validate_interval(fn, interval));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  BAGUA_TRY(c->check_usable());
  // A local step: no communication.
  if (step % interval != 0) {
    if (call.src != call.dst) std::memcpy(call.dst, call.src, call.count * dtype_size(call.dtype));
    return BAGUA_SUCCESS;
  }
  AlgoContext ctx = c->next_call(Channel::decentralized);
  if (peer_mode == PeerMode::all) return c->finish_call(average_all(*c, ctx, call));
  const std::vector<int> peers = peers_of(peer_mode, c->rank(), c->size(), step / interval);
  return c->finish_call(average_with_peers(ctx, call.src, call.dst, call.count, call.dtype, peers));
}

Status create_state(const void *buf, int count, MPI_Datatype datatype, int interval, MPI_Comm comm,
                    bagua_lowprec_t *state) {
  const char *fn = "bagua_lowprec_create";
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: state is NULL", fn);
  *state = nullptr;
  DType dtype;
  BAGUA_TRY(validate_buffer(fn, buf, count, datatype, &dtype));
  if (dtype == DType::f64)
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "%s: datatype MPI_DOUBLE is not supported by the q8 codec (use MPI_FLOAT, "
                "BAGUA_FLOAT16 or BAGUA_BFLOAT16)",
                fn);
  BAGUA_TRY(validate_interval(fn, interval));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  BAGUA_TRY(c->check_usable());
  auto s = std::make_unique<bagua_lowprec_s>();
  s->comm = comm;
  s->count = static_cast<size_t>(count);
  s->dtype = dtype;
  s->interval = interval;
  AlgoContext ctx = c->next_call(Channel::decentralized);
  BAGUA_TRY(c->finish_call(lowprec_init(ctx, buf, s->count, dtype, &s->replicas)));
  *state = s.release();
  return BAGUA_SUCCESS;
}

Status step_state(bagua_lowprec_t state, void *buf) {
  const char *fn = "bagua_lowprec_step";
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: state is NULL", fn);
  if (state->count > 0 && buf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: buf is NULL (the state has %zu elements)", fn,
                state->count);
  if (state->broken)
    return fail(BAGUA_ERR_COMM_BROKEN, "%s: an earlier step failed; free this state", fn);
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(state->comm, &c));
  BAGUA_TRY(c->check_usable());
  if (state->calls++ % state->interval != 0) return BAGUA_SUCCESS;
  AlgoContext ctx = c->next_call(Channel::decentralized);
  const Status s =
      c->finish_call(lowprec_step(ctx, buf, state->count, state->dtype, &state->replicas));
  state->broken = s != BAGUA_SUCCESS;
  return s;
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
    if (state == nullptr)
      return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_lowprec_replicas: state is NULL");
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
