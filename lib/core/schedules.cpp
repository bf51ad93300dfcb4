#include "schedules.hpp"

#include <array>

#include "../algo/allreduce.hpp"
#include "../algo/reduce.hpp"
#include "comm.hpp"
#include "hierarchy.hpp"
#include "run.hpp"

namespace bagua {
namespace {

AllreduceArgs exact_args(const Call &call) {
  return {call.src, call.dst, call.count, call.dtype, call.op};
}

int divisor_of(const Call &call, int ranks) { return call.op == ReduceOp::avg ? ranks : 1; }

Status run_ring(AlgoContext &ctx, const Call &call, const Options &, PhaseSink *) {
  return allreduce_ring(ctx, exact_args(call));
}

Status run_recursive_doubling(AlgoContext &ctx, const Call &call, const Options &, PhaseSink *) {
  return allreduce_recursive_doubling(ctx, exact_args(call));
}

Status run_bytegrad(AlgoContext &ctx, const Call &call, const Options &options, PhaseSink *sink) {
  const int ranks = ctx.transport.size();
  const std::unique_ptr<ChunkCodec> codec = make_call_codec(call, ranks, options);
  if (codec == nullptr)
    return fail(BAGUA_ERR_INTERNAL, "no %s codec for %s memory", wire_name(call.wire),
                call.memory == Memory::cuda ? "device" : "host");
  const CompressedArgs args{call.src,   call.dtype, call.dst,
                            call.dtype, call.count, divisor_of(call, ranks)};
  if (sink == nullptr) return allreduce_compressed(ctx, *codec, args);
  TimedCodec timed(*codec, *sink);
  return allreduce_compressed(ctx, timed, args);
}

// Exact float32 sum inside the node at its leader, compressed allreduce
// among the leaders, broadcast of the result inside the node.
Status run_hierarchical(Communicator &c, const Call &call) {
  AlgoContext check_ctx = c.next_call();
  BAGUA_TRY(c.record(agree_on_call(check_ctx, call, Schedule::hierarchical, c.options())));
  Hierarchy *h = nullptr;
  BAGUA_TRY(c.record(c.hierarchy(&h)));
  Communicator &node = h->node();
  BAGUA_TRY(node.check_usable());
  SendVector<float> node_sum(h->is_leader() ? call.count : 0);
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

size_t ring_sent(const Call &call, int rank, int ranks, const Options &) {
  return ring_bytes_sent(call.count, call.dtype, rank, ranks);
}

size_t recursive_doubling_sent(const Call &call, int rank, int ranks, const Options &) {
  return recursive_doubling_bytes_sent(call.count, call.dtype, rank, ranks);
}

size_t bytegrad_sent(const Call &call, int rank, int ranks, const Options &options) {
  return bytegrad_bytes_sent(*sizing_codec(call, ranks, options), call.count, rank, ranks,
                             options.segment_bytes);
}

// In the order of Schedule.
constexpr std::array<ScheduleInfo, 4> kSchedules{{
    {Schedule::ring, "ring", run_ring, nullptr, ring_sent},
    {Schedule::recursive_doubling, "recursive_doubling", run_recursive_doubling, nullptr,
     recursive_doubling_sent},
    {Schedule::bytegrad, "bytegrad", run_bytegrad, nullptr, bytegrad_sent},
    {Schedule::hierarchical, "hierarchical", nullptr, run_hierarchical, bytegrad_sent},
}};

constexpr bool listed_in_order() {
  for (size_t i = 0; i < kSchedules.size(); ++i)
    if (size_t(kSchedules[i].id) != i) return false;
  return true;
}
static_assert(listed_in_order(), "kSchedules follows the order of Schedule");

}  // namespace

const ScheduleInfo &schedule_info(Schedule s) { return kSchedules[size_t(s)]; }

}  // namespace bagua
