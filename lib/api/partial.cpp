// C entry points of partial reduce: averaging among the first P ready ranks.
// Tags come from the group id the controller assigns (ranks make different
// numbers of calls, so the per-call sequence of next_call() does not apply).
#include <algorithm>

#include "../core/partial_state.hpp"
#include "../core/run.hpp"
#include "../core/runtime.hpp"
#include "../core/support.hpp"
#include "guard.hpp"

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

void fill_info(const PlannedGroup &g, const std::vector<double> &weights, size_t bytes_sent,
               bagua_group_info *info) {
  const int64_t newest = *std::max_element(g.iterations.begin(), g.iterations.end());
  info->group_id = g.id;
  info->size = static_cast<int>(g.members.size());
  info->listed = std::min(info->size, BAGUA_GROUP_INFO_MAX_MEMBERS);
  info->bridging = g.bridging ? 1 : 0;
  info->bytes_sent = static_cast<long long>(bytes_sent);
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
                "group_size %d is outside [0, %d] (0: the default, BAGUA_PARTIAL_GROUP_SIZE)",
                group_size, size);
  return BAGUA_SUCCESS;
}

// BAGUA_PARTIAL_COMPRESSION picks the call's wire format (support matrix),
// and a codec averages uniformly. Checked before the rank asks for a group,
// so a refused call leaves no group waiting for it.
Status apply_compression(const PartialOptions &o, Call *call) {
  if (o.compression == Wire::exact) return BAGUA_SUCCESS;
  call->wire = o.compression;
  const Status s = check_support(call->family, call->wire, call->dtype, call->op, call->memory);
  if (s != BAGUA_SUCCESS)
    return fail(s, "with BAGUA_PARTIAL_COMPRESSION=%s: %s", wire_name(o.compression),
                std::string(last_error_message()).c_str());
  if (o.weights != PartialWeights::uniform)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "BAGUA_PARTIAL_COMPRESSION=%s needs BAGUA_PARTIAL_WEIGHTS=uniform",
                wire_name(o.compression));
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

Status partial_reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                      int group_size, MPI_Comm comm, bagua_group_info *info) {
  BAGUA_TRY(runtime_ensure());
  Call call;
  BAGUA_TRY(describe_reduction(Family::partial, Wire::exact, sendbuf, recvbuf, count, datatype,
                               runtime_avg_op(), comm, &call));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  BAGUA_TRY(check_group_size(group_size, c->size()));
  BAGUA_TRY(apply_compression(c->options().partial, &call));
  PartialState *state = nullptr;
  BAGUA_TRY(get_state(c, &state));
  PlannedGroup group;
  BAGUA_TRY(c->record(state->ready(resolve_group_size(group_size, *c), &group)));
  const PartialWeights kind = c->options().partial.weights;
  const std::vector<double> weights = member_weights(group, kind);
  const size_t local = static_cast<size_t>(
      std::find(group.members.begin(), group.members.end(), c->rank()) - group.members.begin());
  const double weight = kind == PartialWeights::uniform ? -1.0 : weights[local];
  BAGUA_TRY(run_group_average(*c, call, group.members, static_cast<int>(local), group.id, weight,
                              state->scratch()));
  if (info == nullptr) return BAGUA_SUCCESS;
  size_t bytes = 0;
  BAGUA_TRY(flat_bytes_sent(call, static_cast<int>(local), static_cast<int>(group.members.size()),
                            c->options(), &bytes));
  fill_info(group, weights, bytes, info);
  return BAGUA_SUCCESS;
}

Status partial_leave(MPI_Comm comm) {
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  PartialState *state = nullptr;
  BAGUA_TRY(get_state(c, &state));
  if (state->has_left())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "this rank already left (no bagua_partial_reduce since its last "
                "bagua_partial_leave)");
  return c->record(state->leave());
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
