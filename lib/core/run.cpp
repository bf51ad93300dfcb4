#include "run.hpp"

#include <vector>

#include "../algo/reduce.hpp"
#include "../algo/subgroup.hpp"
#include "../mc/cuda_codecs.hpp"
#include "../mc/cuda_stream.hpp"
#include "comm.hpp"
#include "hierarchy.hpp"

namespace bagua {
namespace {

// The two prescales of the cast codecs (contribution, reduced chunk).
struct Prescale {
  float contribution = 1, reduced = 1;
};

// fp16: scaling by 1/n keeps a sum of n float16 values within float16's
// range; an average already is. bf16 has float32's range: no prescale.
Prescale prescale_of(const Call &call, int ranks) {
  if (call.wire != Wire::fp16) return {};
  const float inv = 1.0f / float(ranks);
  return {inv, call.op == ReduceOp::avg ? 1.0f : inv};
}

std::unique_ptr<ChunkCodec> host_codec(const Call &call, uint32_t block, Prescale p) {
  switch (call.wire) {
    case Wire::q8: return make_q8_codec(block);
    case Wire::fp16: return make_cast_codec(codec::CastFormat::fp16, p.contribution, p.reduced);
    case Wire::bf16: return make_cast_codec(codec::CastFormat::bf16, p.contribution, p.reduced);
    case Wire::sign:
      return make_sign_codec(block, call.feedback->contribution.data(),
                             call.feedback->reduced.data());
    case Wire::exact: break;
  }
  return nullptr;
}

int divisor_of(const Call &call, int ranks) { return call.op == ReduceOp::avg ? ranks : 1; }

Status run_compressed(AlgoContext &ctx, const Call &call, const Options &options,
                      PhaseSink *sink) {
  const int ranks = ctx.transport.size();
  const std::unique_ptr<ChunkCodec> codec = make_call_codec(call, ranks, options);
  const CompressedArgs args{call.src,   call.dtype, call.dst,
                            call.dtype, call.count, divisor_of(call, ranks)};
  if (sink == nullptr) return allreduce_compressed(ctx, *codec, args);
  TimedCodec timed(*codec, *sink);
  return allreduce_compressed(ctx, timed, args);
}

// Exact float32 sum inside the node at its leader, compressed allreduce
// among the leaders, broadcast of the result inside the node.
Status run_hierarchical(Communicator &c, const Call &call) {
  Hierarchy *h = nullptr;
  BAGUA_TRY(c.record(c.hierarchy(&h)));
  Communicator &node = h->node();
  BAGUA_TRY(node.check_usable());
  std::vector<float> node_sum(h->is_leader() ? call.count : 0);
  AlgoContext reduce_ctx = node.next_call();
  BAGUA_TRY(c.record(node.record(
      node_reduce_to_leader(reduce_ctx, call.src, call.dtype, call.count, node_sum.data()))));
  if (h->is_leader()) {
    Communicator &leaders = h->leaders();
    BAGUA_TRY(leaders.check_usable());
    AlgoContext ctx = leaders.next_call();
    const std::unique_ptr<ChunkCodec> codec = make_call_codec(call, c.size(), c.options());
    const CompressedArgs args{node_sum.data(), DType::f32, call.dst,
                              call.dtype,      call.count, divisor_of(call, c.size())};
    BAGUA_TRY(c.record(leaders.record(allreduce_compressed(ctx, *codec, args))));
  }
  AlgoContext bcast_ctx = node.next_call();
  return c.record(
      node.record(node_broadcast_from_leader(bcast_ctx, call.dst, call.dtype, call.count)));
}

}  // namespace

std::unique_ptr<ChunkCodec> make_call_codec(const Call &call, int ranks, const Options &options) {
  const auto block = static_cast<uint32_t>(options.compressed.codec_block);
  const Prescale p = prescale_of(call, ranks);
  if (call.memory == Memory::cuda)
    return make_device_codec(call.wire, block, p.contribution, p.reduced,
                             cuda_stream_of(call.comm));
  return host_codec(call, block, p);
}

Status run_flat(AlgoContext &ctx, const Call &call, Schedule schedule, const Options &options,
                PhaseSink *sink) {
  const AllreduceArgs args{call.src, call.dst, call.count, call.dtype, call.op};
  switch (schedule) {
    case Schedule::ring: return allreduce_ring(ctx, args);
    case Schedule::recursive_doubling: return allreduce_recursive_doubling(ctx, args);
    case Schedule::bytegrad: return run_compressed(ctx, call, options, sink);
    case Schedule::hierarchical: break;
  }
  return fail(BAGUA_ERR_INTERNAL, "schedule %s is not flat", schedule_name(schedule));
}

Status run_blocking(Communicator &c, const Call &call) {
  Schedule schedule;
  BAGUA_TRY(select_schedule(SelectionSettings::from(c.options()), call.family, call.wire,
                            call.count * dtype_size(call.dtype), call.memory, &schedule));
  if (schedule == Schedule::hierarchical) return run_hierarchical(c, call);
  AlgoContext ctx = c.next_call();
  return c.record(run_flat(ctx, call, schedule, c.options()));
}

Status run_peer_average(Communicator &c, const Call &call, PeerMode mode, int round) {
  if (mode == PeerMode::all) return run_blocking(c, call);
  const std::vector<int> peers = peers_of(mode, c.rank(), c.size(), round);
  AlgoContext ctx = c.next_call();
  return c.record(average_with_peers(ctx, call.src, call.dst, call.count, call.dtype, peers));
}

uint32_t codec_block(const Communicator &c) {
  return static_cast<uint32_t>(c.options().compressed.codec_block);
}

Status run_lowprec_init(Communicator &c, const Call &call, LowprecReplicas *replicas) {
  AlgoContext ctx = c.next_call();
  return c.record(
      lowprec_init(ctx, call.src, call.count, call.dtype, codec_block(c), replicas));
}

Status run_lowprec_step(Communicator &c, const Call &call, LowprecReplicas *replicas) {
  AlgoContext ctx = c.next_call();
  return c.record(
      lowprec_step(ctx, call.dst, call.count, call.dtype, codec_block(c), replicas));
}

Status run_group_average(Communicator &c, const Call &call, std::span<const int> members,
                         int local, int64_t group_id, double weight,
                         std::vector<unsigned char> &scratch) {
  SubgroupTransport view(c.transport(), members, local);
  AlgoContext ctx{view, c.tags().call(static_cast<uint64_t>(group_id)),
                  Deadline::after_ms(c.options().timeout_ms), scratch, c.options().segment_bytes};
  Call group_call = call;
  if (weight >= 0) {
    // Weighted: each member scales its own contribution, the group sums.
    scale_into(call.dst, call.src, call.count, call.dtype, weight);
    group_call.src = call.dst;
    group_call.op = ReduceOp::sum;
  }
  Schedule schedule;
  BAGUA_TRY(select_schedule(SelectionSettings::from(c.options()), call.family, group_call.wire,
                            call.count * dtype_size(call.dtype), call.memory, &schedule));
  return c.record(run_flat(ctx, group_call, schedule, c.options()));
}

// A codec to size messages with (the sign codec's residuals are not read).
std::unique_ptr<ChunkCodec> sizing_codec(const Call &call, int ranks, const Options &options) {
  static SignFeedback none{MPI_COMM_NULL, 0, {}, {}};
  Call sized = call;
  sized.feedback = &none;
  sized.memory = Memory::host;
  return make_call_codec(sized, ranks, options);
}

Status message_bytes(const Call &call, const Options &options, size_t *bytes) {
  if (call.wire == Wire::exact) {
    *bytes = call.count * dtype_size(call.dtype);
    return BAGUA_SUCCESS;
  }
  *bytes = sizing_codec(call, 1, options)->encoded_bytes(call.count);
  return BAGUA_SUCCESS;
}

Status flat_bytes_sent(const Call &call, int rank, int ranks, const Options &options,
                       size_t *bytes) {
  Schedule schedule;
  BAGUA_TRY(select_schedule(SelectionSettings::from(options), Family::iallreduce, call.wire,
                            call.count * dtype_size(call.dtype), call.memory, &schedule));
  switch (schedule) {
    case Schedule::ring: *bytes = ring_bytes_sent(call.count, call.dtype, rank, ranks); break;
    case Schedule::recursive_doubling:
      *bytes = recursive_doubling_bytes_sent(call.count, call.dtype, rank, ranks);
      break;
    default:
      *bytes = bytegrad_bytes_sent(*sizing_codec(call, ranks, options), call.count, rank, ranks,
                                   options.segment_bytes);
  }
  return BAGUA_SUCCESS;
}

}  // namespace bagua
