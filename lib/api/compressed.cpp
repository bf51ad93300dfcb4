// C entry points of the compressed allreduces (q8, fp16 cast, 1-bit sign)
// and the sign error-feedback state.
#include "../algo/compressed.hpp"
#if BAGUA_HAVE_CUDA
#include "../algo/compressed_codecs_cuda.hpp"
#endif

#include <vector>

#include "../core/comm.hpp"
#include "../core/cuda_stream.hpp"
#include "../core/hierarchy.hpp"
#include "../core/memory.hpp"
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

enum class Method { q8, fp16, bf16, sign };

Channel channel_of(Method m) {
  return m == Method::q8                            ? Channel::allreduce_q8
         : (m == Method::fp16 || m == Method::bf16) ? Channel::allreduce_cast
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

// Where the call's buffers live; both must be on the same side. Device
// buffers exist only in a CUDA build with a device present.
Status buffers_on_device(const char *fn, Method m, const ReductionCall &call, bool *device) {
  const bool src = is_device_pointer(call.src), dst = is_device_pointer(call.dst);
  if (src != dst)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: sendbuf is in %s memory but recvbuf in %s memory; both must be host "
                "buffers or both CUDA device buffers",
                fn, src ? "CUDA device" : "host", dst ? "CUDA device" : "host");
  if (dst && m == Method::sign)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: CUDA device buffers are supported by bagua_allreduce_q8 and "
                "bagua_allreduce_fp16 only; pass host memory",
                fn);
  *device = dst;
  return BAGUA_SUCCESS;
}

#if BAGUA_HAVE_CUDA
std::unique_ptr<ChunkCodec> q8_codec(uint32_t block, bool device, void *stream) {
  return device ? make_gpu_q8_codec(block, stream) : make_q8_codec(block);
}
std::unique_ptr<ChunkCodec> cast_codec(codec::CastFormat format, float contribution, float reduced,
                                       bool device, void *stream) {
  return device ? make_gpu_cast_codec(format, contribution, reduced, stream)
                : make_cast_codec(format, contribution, reduced);
}
#else
// Without CUDA every buffer is a host buffer.
std::unique_ptr<ChunkCodec> q8_codec(uint32_t block, bool, void *) { return make_q8_codec(block); }
std::unique_ptr<ChunkCodec> cast_codec(codec::CastFormat format, float contribution, float reduced,
                                       bool, void *) {
  return make_cast_codec(format, contribution, reduced);
}
#endif

// The codec for a call over `ranks` contributors in all, on host or device
// buffers (device codecs run on `stream`).
std::unique_ptr<ChunkCodec> make_codec(Method m, const Options &o, int ranks, bool average,
                                       bagua_sign_state *state, bool device, void *stream) {
  const auto block = static_cast<uint32_t>(o.compressed.codec_block);
  switch (m) {
    case Method::q8: return q8_codec(block, device, stream);
    case Method::fp16: {
      // Scaling by 1/n keeps a sum of n float16 values within float16 range;
      // an average is already in range.
      const float inv = 1.0f / float(ranks);
      return cast_codec(codec::CastFormat::fp16, inv, average ? 1.0f : inv, device, stream);
    }
    case Method::bf16:
      // bfloat16 has float32's range: no prescale.
      return cast_codec(codec::CastFormat::bf16, 1.0f, 1.0f, device, stream);
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
  BAGUA_TRY(validate_reduction_any_memory(fn, sendbuf, recvbuf, count, datatype, op, &call));
  BAGUA_TRY(validate_compressed(fn, call));
  bool device = false;
  BAGUA_TRY(buffers_on_device(fn, method, call, &device));
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
  if (device && c->options().compressed.hierarchical)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: CUDA device buffers are not supported with BAGUA_HIERARCHICAL=1; pass "
                "host memory or use the flat mode",
                fn);
  const bool average = call.op == ReduceOp::avg;
  const std::unique_ptr<ChunkCodec> codec =
      make_codec(method, c->options(), c->size(), average, state, device, cuda_stream_of(comm));
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

Status set_stream(MPI_Comm comm, void *stream) {
  BAGUA_TRY(runtime_ensure());
  if (comm == MPI_COMM_NULL)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_set_cuda_stream: comm is MPI_COMM_NULL");
  if (!BAGUA_HAVE_CUDA)
    return fail(BAGUA_ERR_NOT_AVAILABLE, "bagua_set_cuda_stream: bagua was built without CUDA");
  set_cuda_stream(comm, stream);
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

extern "C" int bagua_allreduce_bf16(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_allreduce_bf16", [&] {
    return bagua::compressed_allreduce("bagua_allreduce_bf16", bagua::Method::bf16, sendbuf,
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

extern "C" int bagua_sign_state_destroy(bagua_sign_state_t *state) {
  return bagua::guard("bagua_sign_state_destroy", [&] {
    if (state == nullptr)
      return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_sign_state_destroy: state is NULL");
    delete *state;
    *state = nullptr;
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_set_cuda_stream(MPI_Comm comm, void *stream) {
  return bagua::guard("bagua_set_cuda_stream", [&] { return bagua::set_stream(comm, stream); });
}
