// C entry points of partial reduce: averaging among the first P ready ranks.
// Tags come from the group id the controller assigns (ranks make different
// numbers of calls, so the per-call sequence of next_call() does not apply).
#include <algorithm>

#include "../algo/partial_average.hpp"
#include "../core/partial_state.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"
#include "validate.hpp"

namespace bagua {
namespace {

// Member weights: uniform 1/size, or proportional to 1 / (1 + staleness).
std::vector<double> member_weights(const PlannedGroup &g, PartialWeights kind) {
  const size_t size = g.members.size();
  std::vector<double> w(size, 1.0 / static_cast<double>(size));
  if (kind == PartialWeights::uniform) return w;
  const int64_t newest = *std::max_element(g.iterations.begin(), g.iterations.end());
  double total = 0;
  for (size_t i = 0; i < size; ++i) total += w[i] = 1.0 / double(1 + newest - g.iterations[i]);
  for (double &x : w) x /= total;
  return w;
}

void fill_info(const PlannedGroup &g, const std::vector<double> &weights, bagua_group_info *info) {
  const int64_t newest = *std::max_element(g.iterations.begin(), g.iterations.end());
  info->group_id = g.id;
  info->size = static_cast<int>(g.members.size());
  info->listed = std::min(info->size, BAGUA_GROUP_INFO_MAX_MEMBERS);
  info->bridging = g.bridging ? 1 : 0;
  for (size_t i = 0; i < static_cast<size_t>(info->listed); ++i) {
    info->members[i] = g.members[i];
    info->iterations[i] = g.iterations[i];
    info->staleness[i] = newest - g.iterations[i];
    info->weights[i] = weights[i];
  }
}

Status check_group_size(int group_size, int size) {
  if (group_size < 0 || group_size > size)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_partial_reduce: group_size %d is outside [0, %d] (0: the default, "
                "BAGUA_PARTIAL_GROUP_SIZE)",
                group_size, size);
  return BAGUA_SUCCESS;
}

// The q8 group average reads float32 and halves only, and averages uniformly.
// Checked before the rank asks for a group, so a refused call leaves no
// group waiting for it.
Status check_compression(const char *fn, const ReductionCall &call, const PartialOptions &o) {
  if (o.compression == PartialCompression::none) return BAGUA_SUCCESS;
  if (call.dtype == DType::f64)
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "%s: with BAGUA_PARTIAL_COMPRESSION=q8 the datatype must be MPI_FLOAT, "
                "BAGUA_FLOAT16 or BAGUA_BFLOAT16 (got %s)",
                fn, dtype_name(call.dtype));
  if (o.weights != PartialWeights::uniform)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: BAGUA_PARTIAL_COMPRESSION=q8 needs BAGUA_PARTIAL_WEIGHTS=uniform", fn);
  return BAGUA_SUCCESS;
}

int resolve_group_size(int group_size, const Communicator &c) {
  if (group_size > 0) return group_size;
  const int configured = c.options().partial.group_size;
  return configured > 0 ? configured : (c.size() + 1) / 2;
}

Status get_state(Communicator *c, PartialState **out) {
  BAGUA_TRY(c->check_usable());
  return PartialState::get(*c, out);
}

Status average_in_group(Communicator &c, PartialState &state, const ReductionCall &call,
                        const PlannedGroup &group, size_t local, double weight) {
  SubgroupTransport view(c.transport(), group.members, static_cast<int>(local));
  AlgoContext ctx{view, TagSpace::make(Channel::partial_reduce, static_cast<uint32_t>(group.id)),
                  Deadline::after_ms(c.options().timeout_ms), state.scratch(),
                  c.options().segment_bytes};
  if (c.options().partial.compression == PartialCompression::q8) {
    const auto codec = make_q8_codec(static_cast<uint32_t>(c.options().compressed.codec_block));
    return group_average_compressed(ctx, *codec, call.src, call.dst, call.count, call.dtype);
  }
  const size_t bytes = call.count * dtype_size(call.dtype);
  const AllreduceAlgo algo = c.options().allreduce_algo;
  const bool ring = algo == AllreduceAlgo::ring ||
                    (algo == AllreduceAlgo::automatic && bytes >= c.options().ring_threshold_bytes);
  return group_average(ctx, {call.src, call.dst, call.count, call.dtype, weight, ring});
}

Status partial_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      int group_size, MPI_Comm comm, bagua_group_info *info) {
  constexpr const char *fn = "bagua_partial_reduce";
  BAGUA_TRY(runtime_ensure());
  ReductionCall call;
  BAGUA_TRY(validate_reduction(fn, sendbuf, recvbuf, count, datatype, runtime_avg_op(), &call));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  BAGUA_TRY(check_group_size(group_size, c->size()));
  BAGUA_TRY(check_compression(fn, call, c->options().partial));
  PartialState *state = nullptr;
  BAGUA_TRY(get_state(c, &state));
  PlannedGroup group;
  BAGUA_TRY(c->finish_call(state->ready(resolve_group_size(group_size, *c), &group)));
  const PartialWeights kind = c->options().partial.weights;
  const std::vector<double> weights = member_weights(group, kind);
  const size_t local = static_cast<size_t>(
      std::find(group.members.begin(), group.members.end(), c->rank()) - group.members.begin());
  const double weight = kind == PartialWeights::uniform ? -1.0 : weights[local];
  BAGUA_TRY(c->finish_call(average_in_group(*c, *state, call, group, local, weight)));
  if (info != nullptr) fill_info(group, weights, info);
  return BAGUA_SUCCESS;
}

Status partial_leave(MPI_Comm comm) {
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  PartialState *state = nullptr;
  BAGUA_TRY(get_state(c, &state));
  if (state->has_left())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_partial_leave: this rank already left (no bagua_partial_reduce since its "
                "last bagua_partial_leave)");
  return c->finish_call(state->leave());
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_partial_reduce(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, int group_size, MPI_Comm comm,
                                    bagua_group_info *info) {
  return bagua::guard("bagua_partial_reduce", [&] {
    return bagua::partial_reduce(sendbuf, recvbuf, count, datatype, group_size, comm, info);
  });
}

extern "C" int bagua_partial_leave(MPI_Comm comm) {
  return bagua::guard("bagua_partial_leave", [&] { return bagua::partial_leave(comm); });
}
