#include "run.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include "../algo/reduce.hpp"
#include "../algo/request_set.hpp"
#include "../algo/subgroup.hpp"
#include "../mc/cuda_stream.hpp"
#include "../mc/staging_pool.hpp"
#include "comm.hpp"
#include "device_codecs.hpp"
#include "support.hpp"

namespace bagua {
namespace {

// The prescales of a wire that asks for them (fp16: scaling by 1/n keeps a
// sum of n float16 values within float16's range; an average already is).
void set_prescale(const Call &call, int ranks, CodecSetup *setup) {
  if (!wire_info(call.wire).prescale_by_ranks) return;
  const float inv = 1.0f / float(ranks);
  setup->prescale[0] = inv;
  setup->prescale[1] = call.op == ReduceOp::avg ? 1.0f : inv;
}

// Marks a non-finite input in the call check's values (above any fingerprint).
constexpr double kNonFiniteFlag = 0x1p33;

// Whether a stateful call's input is finite; device buffers are not read.
bool input_finite(const Call &call) {
  return call.memory == Memory::cuda || all_finite(call.src, call.count, call.dtype);
}

// The refusal of a stateful call with a non-finite input on `where`, before
// any state changed (every rank of the call refuses it).
Status non_finite(const Call &call, const char *where) {
  return fail(BAGUA_ERR_INVALID_ARGUMENT,
              "the input of %s/%s holds a NaN or an infinity on %s; refused on every rank, "
              "its state unchanged (skip the step on every rank, doc/faults.md)",
              family_name(call.family), wire_name(call.wire), where);
}

bool aligned(const void *p, DType t) { return reinterpret_cast<uintptr_t>(p) % dtype_size(t) == 0; }

// The error of a call whose ranks disagree, naming what this rank called.
Status mismatch(const Call &call, const char *who) {
  return fail(BAGUA_ERR_MISMATCH,
              "%s do not make the same call (count, datatype, op or algorithm differ); this "
              "rank called %s/%s of %zu x %s with %s",
              who, family_name(call.family), wire_name(call.wire), call.count,
              dtype_name(call.dtype), op_name(call.op));
}

// The user's device buffer copied into a slot of c's staging, read after
// the work queued on the call's stream.
Status stage_to_host(Communicator &c, const Call &call, StagedCopy *staged) {
  StagingPool *pool = nullptr;
  BAGUA_TRY(c.staging(&pool));
  return stage_in(*pool, call.src, call.count * dtype_size(call.dtype), cuda_stream_of(call.comm),
                  staged);
}

// What a call that runs on the device needs from c: its device scratch,
// and for sign the state's residuals on the device (made from the host ones
// on the state's first call).
Status prepare_device_call(Communicator &c, Call *call) {
  BAGUA_TRY(c.device_scratch(&call->scratch));
  SignFeedback *f = call->feedback;
  if (!wire_info(call->wire).error_feedback || f->device_contribution.get() != nullptr)
    return BAGUA_SUCCESS;
  Device &device = call->scratch->device();
  BAGUA_TRY(f->device_contribution.make(device, f->contribution.data(), f->count));
  return f->device_reduced.make(device, f->reduced.data(), f->count);
}

// Runs body(call) on buffers its schedule can use; the one place that
// decides how a call's memory reaches the algorithms:
// - aligned host buffers as they are; misaligned ones through an aligned
//   copy (with_aligned_buffers);
// - aligned device buffers of a call with a device schedule (runs_on_device)
//   as they are, with c's device scratch (and a sign state's device
//   residuals) for the device codec;
// - other device buffers staged through c's page-locked staging (the one
//   that every host schedule's device buffers take): copied to the host once
//   the call's stream reached the call, run there in place, copied back. The
//   call returns with the result in recvbuf.
template <class Body>
Status with_runnable_buffers(Communicator &c, const Call &call, Body &&body) {
  if (call.memory != Memory::cuda || call.count == 0) return with_aligned_buffers(call, body);
  const size_t bytes = call.count * dtype_size(call.dtype);
  if (buffers_aligned(call) && c.policy().runs_on_device(call.family, call.wire, bytes)) {
    Call on_device = call;
    BAGUA_TRY(prepare_device_call(c, &on_device));
    return body(on_device);
  }
  StagedCopy staged;
  BAGUA_TRY(c.record(stage_to_host(c, call, &staged)));
  BAGUA_TRY(body(staged_on_host(call, staged.host())));
  return c.record(stage_out(staged, call.dst, bytes));
}

}  // namespace

uint32_t fingerprint_of(std::span<const uint64_t> fields) {
  // FNV-1a over the fields every rank must pass alike.
  uint32_t hash = 2166136261u;
  for (uint64_t field : fields)
    for (int byte = 0; byte < 8; ++byte) hash = (hash ^ uint8_t(field >> (8 * byte))) * 16777619u;
  return hash;
}

uint32_t call_fingerprint(const Call &call, Schedule schedule, uint64_t extra) {
  const uint64_t fields[] = {uint64_t(call.family),
                             uint64_t(call.wire),
                             uint64_t(schedule),
                             uint64_t(call.count),
                             uint64_t(call.dtype),
                             uint64_t(call.op),
                             extra};
  return fingerprint_of(fields);
}

Status agree_on_fingerprint(AlgoContext &ctx, uint32_t mine, bool *same) {
  // max(fp) == -max(-fp) holds only when every rank has the same fp.
  double v[2] = {double(mine), -double(mine)};
  BAGUA_TRY(allreduce_recursive_doubling(ctx, {v, v, 2, DType::f64, ReduceOp::max}));
  *same = v[0] == -v[1];
  return BAGUA_SUCCESS;
}

bool keeps_state(const Call &call) {
  return wire_info(call.wire).error_feedback || call.family == Family::lowprec;
}

Status agree_on_call(AlgoContext &ctx, const Call &call, Schedule schedule,
                     const Options &options) {
  const bool stateful = keeps_state(call);
  const bool finite = !stateful || input_finite(call);
  if ((!options.check_calls && !stateful) || ctx.transport.size() == 1)
    return finite ? BAGUA_SUCCESS : non_finite(call, "this rank");
  const uint32_t mine = options.check_calls ? call_fingerprint(call, schedule) : 0;
  // max(fp) == -max(-fp) holds only when every rank has the same fp; 2^33
  // (above any fingerprint) added to both marks a rank's non-finite input.
  const double flag = finite ? 0 : kNonFiniteFlag;
  double v[2] = {flag + double(mine), flag - double(mine)};
  BAGUA_TRY(allreduce_recursive_doubling(ctx, {v, v, 2, DType::f64, ReduceOp::max}));
  if (v[0] >= kNonFiniteFlag) return non_finite(call, finite ? "another rank" : "this rank");
  if (v[0] != -v[1]) return mismatch(call, "the ranks");
  return BAGUA_SUCCESS;
}

Status agree_with_peers(AlgoContext &ctx, const Call &call, uint64_t extra,
                        const std::vector<int> &peers, const Options &options) {
  if (!options.check_calls || peers.empty()) return BAGUA_SUCCESS;
  const uint32_t mine = call_fingerprint(call, Schedule::ring, extra);
  Transport &t = ctx.transport;
  std::vector<uint32_t> theirs(peers.size());
  RequestSet reqs(t, 2, [&](size_t) { return peers.size(); });
  for (size_t i = 0; i < peers.size(); ++i) {
    BAGUA_TRY(t.irecv(&theirs[i], sizeof(uint32_t), peers[i], ctx.tags.at(0), &reqs.row(0)[i]));
    BAGUA_TRY(t.isend(&mine, sizeof mine, peers[i], ctx.tags.at(0), &reqs.row(1)[i]));
  }
  BAGUA_TRY(wait_all(t, reqs.row(0), ctx.deadline));
  BAGUA_TRY(wait_all(t, reqs.row(1), ctx.deadline));
  for (uint32_t other : theirs)
    if (other != mine) return mismatch(call, "this rank and its peers");
  return BAGUA_SUCCESS;
}

Call staged_on_host(const Call &call, void *copy) {
  Call host = call;
  host.src = host.dst = copy;
  host.memory = Memory::host;
  return host;
}

bool buffers_aligned(const Call &call) {
  return call.count == 0 || (aligned(call.src, call.dtype) && aligned(call.dst, call.dtype));
}

Status AlignedStaging::stage(const Call &call, Call *staged) {
  // 8-byte words: aligned for every element type.
  const size_t bytes = call.count * dtype_size(call.dtype);
  words_.resize((bytes + 7) / 8);
  std::memcpy(words_.data(), call.src, bytes);
  *staged = call;
  staged->src = staged->dst = words_.data();
  return BAGUA_SUCCESS;
}

void AlignedStaging::copy_back(const Call &call) const {
  std::memcpy(call.dst, words_.data(), call.count * dtype_size(call.dtype));
}

std::unique_ptr<ChunkCodec> make_call_codec(const Call &call, int ranks, const Options &options) {
  const WireInfo &wire = wire_info(call.wire);
  CodecSetup setup;
  setup.block = options.compressed.block(call.wire);
  set_prescale(call, ranks, &setup);
  const bool device = call.memory == Memory::cuda;
  if (wire.error_feedback) {
    SignFeedback &f = *call.feedback;
    setup.residual[0] = device ? f.device_contribution.get() : f.contribution.data();
    setup.residual[1] = device ? f.device_reduced.get() : f.reduced.data();
    if (device && setup.residual[0] == nullptr) return nullptr;  // prepare_device_call makes them
  }
  if (!device) return make_host_codec(wire, setup);
  if (call.scratch == nullptr) return nullptr;
  return make_device_codec(wire, setup, *call.scratch, cuda_stream_of(call.comm));
}

Status run_flat(AlgoContext &ctx, const Call &call, const ScheduleInfo &schedule,
                const Options &options, PhaseSink *sink) {
  if (!schedule.flat()) return fail(BAGUA_ERR_INTERNAL, "schedule %s is not flat", schedule.name);
  BAGUA_TRY(agree_on_call(ctx, call, schedule.id, options));
  return schedule.run_flat(ctx, call, options, sink);
}

Status run_blocking(Communicator &c, const Call &call) {
  return with_runnable_buffers(c, call, [&](const Call &ready) {
    const ScheduleInfo *schedule = nullptr;
    BAGUA_TRY(c.policy().select(ready.family, ready.wire, ready.count * dtype_size(ready.dtype),
                                ready.memory, &schedule));
    if (!schedule->flat()) return schedule->run_on_communicator(c, ready);
    AlgoContext ctx = c.next_call();
    return c.record(run_flat(ctx, ready, *schedule, c.options()));
  });
}

Status copy_input_to_output(const Call &call) {
  const size_t bytes = call.count * dtype_size(call.dtype);
  if (call.src == call.dst || bytes == 0) return BAGUA_SUCCESS;
  if (call.memory != Memory::cuda) {
    std::memcpy(call.dst, call.src, bytes);
    return BAGUA_SUCCESS;
  }
  Device *device = nullptr;
  BAGUA_TRY(require_active_device(&device));
  return copy_and_wait(*device, call.dst, call.src, bytes, cuda_stream_of(call.comm));
}

Status run_peer_average(Communicator &c, const Call &call, PeerMode mode, int round) {
  if (mode == PeerMode::all) return run_blocking(c, call);
  const std::vector<int> peers = peers_of(mode, c.rank(), c.size(), round);
  return with_runnable_buffers(c, call, [&](const Call &ready) {
    AlgoContext ctx = c.next_call();
    const uint64_t schedule = uint64_t(mode) << 32 | uint32_t(round);
    BAGUA_TRY(c.record(agree_with_peers(ctx, ready, schedule, peers, c.options())));
    return c.record(average_with_peers(ctx, ready.src, ready.dst, ready.count, ready.dtype, peers));
  });
}

LowprecCodec lowprec_codec(const Communicator &c) {
  const WireInfo &wire = lowprec_wire();
  return {*wire.host, {c.options().compressed.block(wire.id), 1, nullptr}};
}

Status run_lowprec_init(Communicator &c, const Call &call, LowprecReplicas *replicas) {
  return with_runnable_buffers(c, call, [&](const Call &ready) {
    AlgoContext ctx = c.next_call();
    BAGUA_TRY(c.record(agree_on_call(ctx, ready, Schedule::ring, c.options())));
    return c.record(
        lowprec_init(ctx, ready.src, ready.count, ready.dtype, lowprec_codec(c), replicas));
  });
}

Status run_lowprec_step(Communicator &c, const Call &call, LowprecReplicas *replicas) {
  return with_runnable_buffers(c, call, [&](const Call &ready) {
    AlgoContext ctx = c.next_call();
    BAGUA_TRY(c.record(agree_on_call(ctx, ready, Schedule::ring, c.options())));
    return c.record(
        lowprec_step(ctx, ready.dst, ready.count, ready.dtype, lowprec_codec(c), replicas));
  });
}

Status average_in_group(AlgoContext &ctx, const Call &call, const ScheduleInfo &schedule,
                        double weight, const Options &options) {
  if (weight < 0) return run_flat(ctx, call, schedule, options);
  // Weighted: each member scales its own contribution, the group sums.
  Call weighted = call;
  scale_into(call.dst, call.src, call.count, call.dtype, weight);
  weighted.src = call.dst;
  weighted.op = ReduceOp::sum;
  return run_flat(ctx, weighted, schedule, options);
}

Status run_group_average(Communicator &c, const Call &call, std::span<const int> members, int local,
                         int64_t group_id, double weight, Bytes &scratch) {
  SubgroupTransport view(c.transport(), members, local);
  // Groups cycle through the blocking calls' slots, never the point-to-point one.
  const uint64_t slot = static_cast<uint64_t>(group_id) % c.tags().collective_slots();
  AlgoContext ctx{view, c.tags().call(slot), Deadline::after_ms(c.options().timeout_ms), scratch,
                  c.options().segment_bytes};
  return with_runnable_buffers(c, call, [&](const Call &ready) {
    const ScheduleInfo *schedule = nullptr;
    BAGUA_TRY(c.policy().select(ready.family, ready.wire, ready.count * dtype_size(ready.dtype),
                                ready.memory, &schedule));
    return c.record(average_in_group(ctx, ready, *schedule, weight, c.options()));
  });
}

std::unique_ptr<ChunkCodec> sizing_codec(const Call &call, int ranks, const Options &options) {
  static SignFeedback none(MPI_COMM_NULL, 0);
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

size_t schedule_bytes_sent(const Call &call, Schedule schedule, int rank, int ranks,
                           const Options &options) {
  size_t bytes = schedule_info(schedule).bytes_sent(call, rank, ranks, options);
  if ((options.check_calls || keeps_state(call)) && ranks > 1)
    bytes += recursive_doubling_bytes_sent(2, DType::f64, rank, ranks);  // agree_on_call
  return bytes;
}

size_t bytegrad_rounds(const Call &call, int ranks, const Options &options) {
  return bytegrad_segment_rounds(*sizing_codec(call, ranks, options), call.count, ranks,
                                 options.segment_bytes);
}

Status flat_bytes_sent(const Call &call, int rank, int ranks, const Options &options,
                       size_t *bytes) {
  const ScheduleInfo *schedule = nullptr;
  BAGUA_TRY(SelectionPolicy::of(options).select(
      Family::iallreduce, call.wire, call.count * dtype_size(call.dtype), call.memory, &schedule));
  *bytes = schedule_bytes_sent(call, schedule->id, rank, ranks, options);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
