// C entry points of the compressed allreduces (q8, fp16 cast, 1-bit sign)
// and the sign error-feedback state.
#include "../algo/compressed.hpp"

#include <vector>

#include "../core/comm.hpp"
#include "../core/hierarchy.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"
#include "validate.hpp"

struct bagua_sign_state {
  MPI_Comm comm;
  size_t count;
  std::vector<float> contribution_residual;
  std::vector<float> reduced_residual;
};

namespace bagua {
namespace {

enum class Method { q8, fp16, sign };

Channel channel_of(Method m) {
  return m == Method::q8     ? Channel::allreduce_q8
         : m == Method::fp16 ? Channel::allreduce_cast
                             : Channel::allreduce_sign;
}

// Compressed calls support fewer types and ops than the exact allreduce.
Status validate_compressed(const char *fn, const ReductionCall &call) {
  if (call.dtype == DType::f64)
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "%s: datatype must be MPI_FLOAT, BAGUA_FLOAT16 or BAGUA_BFLOAT16 (got %s)", fn,
                dtype_name(call.dtype));
  if (call.op != ReduceOp::sum && call.op != ReduceOp::avg)
    return fail(BAGUA_ERR_UNSUPPORTED_OP, "%s: op must be MPI_SUM or BAGUA_AVG (got %s)", fn,
                op_name(call.op));
  return BAGUA_SUCCESS;
}

// The codec for a call over `ranks` contributors in all.
std::unique_ptr<ChunkCodec> make_codec(Method m, const Options &o, int ranks, bool average,
                                       bagua_sign_state *state) {
  const auto block = static_cast<uint32_t>(o.compressed.codec_block);
  switch (m) {
    case Method::q8: return make_q8_codec(block);
    case Method::fp16: {
      // Scaling by 1/n keeps a sum of n float16 values within float16 range;
      // an average is already in range.
      const float inv = 1.0f / float(ranks);
      return make_cast_codec(codec::CastFormat::fp16, inv, average ? 1.0f : inv);
    }
    case Method::sign:
      return make_sign_codec(block, state->contribution_residual.data(),
                             state->reduced_residual.data());
  }
  return nullptr;
}

Status run_flat(Communicator &c, Channel channel, ChunkCodec &codec, const ReductionCall &call) {
  AlgoContext ctx = c.next_call(channel);
  const CompressedArgs args{call.src,   call.dtype, call.dst,
                            call.dtype, call.count, call.op == ReduceOp::avg ? c.size() : 1};
  return c.finish_call(allreduce_compressed(ctx, codec, args));
}

// Exact float32 sum inside the node at its leader, compressed allreduce
// among the leaders, broadcast of the result inside the node.
Status run_hierarchical(Communicator &c, Channel channel, ChunkCodec &codec,
                        const ReductionCall &call) {
  Hierarchy *h = nullptr;
  BAGUA_TRY(c.finish_call(c.hierarchy(&h)));
  Communicator &node = h->node();
  BAGUA_TRY(node.check_usable());
  std::vector<float> node_sum(h->is_leader() ? call.count : 0);
  AlgoContext reduce_ctx = node.next_call(Channel::hierarchical);
  BAGUA_TRY(c.finish_call(node.finish_call(
      node_reduce_to_leader(reduce_ctx, call.src, call.dtype, call.count, node_sum.data()))));
  if (h->is_leader()) {
    Communicator &leaders = h->leaders();
    BAGUA_TRY(leaders.check_usable());
    AlgoContext ctx = leaders.next_call(channel);
    const CompressedArgs args{node_sum.data(), DType::f32, call.dst,
                              call.dtype,      call.count, call.op == ReduceOp::avg ? c.size() : 1};
    BAGUA_TRY(c.finish_call(leaders.finish_call(allreduce_compressed(ctx, codec, args))));
  }
  AlgoContext bcast_ctx = node.next_call(Channel::hierarchical);
  return c.finish_call(
      node.finish_call(node_broadcast_from_leader(bcast_ctx, call.dst, call.dtype, call.count)));
}

Status compressed_allreduce(const char *fn, Method method, const void *sendbuf, void *recvbuf,
                            int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                            bagua_sign_state *state) {
  ReductionCall call;
  BAGUA_TRY(validate_reduction(fn, sendbuf, recvbuf, count, datatype, op, &call));
  BAGUA_TRY(validate_compressed(fn, call));
  if (method == Method::sign) {
    if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: state is NULL", fn);
    if (state->count != call.count)
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: state was created for count %zu, not %d", fn,
                  state->count, count);
    if (state->comm != comm)
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: state was created for another comm", fn);
  }
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  BAGUA_TRY(c->check_usable());
  const bool average = call.op == ReduceOp::avg;
  const std::unique_ptr<ChunkCodec> codec =
      make_codec(method, c->options(), c->size(), average, state);
  if (c->options().compressed.hierarchical)
    return run_hierarchical(*c, channel_of(method), *codec, call);
  return run_flat(*c, channel_of(method), *codec, call);
}

Status sign_state_create(int count, MPI_Comm comm, bagua_sign_state_t *state) {
  BAGUA_TRY(runtime_ensure());
  if (state == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_sign_state_create: state is NULL");
  if (count < 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_sign_state_create: count %d is negative", count);
  if (comm == MPI_COMM_NULL)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_sign_state_create: comm is MPI_COMM_NULL");
  const auto n = static_cast<size_t>(count);
  *state = new bagua_sign_state{comm, n, std::vector<float>(n), std::vector<float>(n)};
  return BAGUA_SUCCESS;
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_allreduce_q8(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_allreduce_q8", [&] {
    return bagua::compressed_allreduce("bagua_allreduce_q8", bagua::Method::q8, sendbuf, recvbuf,
                                       count, datatype, op, comm, nullptr);
  });
}

extern "C" int bagua_allreduce_fp16(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_allreduce_fp16", [&] {
    return bagua::compressed_allreduce("bagua_allreduce_fp16", bagua::Method::fp16, sendbuf,
                                       recvbuf, count, datatype, op, comm, nullptr);
  });
}

extern "C" int bagua_allreduce_sign(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_sign_state_t state) {
  return bagua::guard("bagua_allreduce_sign", [&] {
    return bagua::compressed_allreduce("bagua_allreduce_sign", bagua::Method::sign, sendbuf,
                                       recvbuf, count, datatype, op, comm, state);
  });
}

extern "C" int bagua_sign_state_create(int count, MPI_Comm comm, bagua_sign_state_t *state) {
  return bagua::guard("bagua_sign_state_create",
                      [&] { return bagua::sign_state_create(count, comm, state); });
}

extern "C" int bagua_sign_state_free(bagua_sign_state_t *state) {
  return bagua::guard("bagua_sign_state_free", [&] {
    if (state == nullptr)
      return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_sign_state_free: state is NULL");
    delete *state;
    *state = nullptr;
    return BAGUA_SUCCESS;
  });
}
