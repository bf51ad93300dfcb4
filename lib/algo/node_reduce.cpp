// The node-local steps of hierarchical mode: exact reduce to the leader
// (member 0) and broadcast from it. Nodes are small and share memory, so both
// are flat (the leader talks to each member), pipelined per segment.
#include <algorithm>

#include "compressed.hpp"
#include "request_set.hpp"
#include "ring_plan.hpp"

namespace bagua {
namespace {

Segments segments_of(const AlgoContext &ctx, DType t, size_t count) {
  return Segments(count, ctx.segment_bytes / dtype_size(t));
}

const unsigned char *byte_at(const void *base, DType t, size_t elem) {
  return static_cast<const unsigned char *>(base) + elem * dtype_size(t);
}

// Members: send every segment of src to the leader.
Status send_to_leader(AlgoContext &ctx, const void *src, DType t, const Segments &seg) {
  RequestSet sends(ctx.transport, 1, [&](size_t) { return seg.number(); });
  for (size_t k = 0; k < seg.number(); ++k)
    BAGUA_TRY(ctx.transport.isend(byte_at(src, t, seg.at(k).begin), seg.at(k).count * dtype_size(t),
                                  0, ctx.tags.at(uint32_t(k)), &sends.row(0)[k]));
  return wait_all(ctx.transport, sends.row(0), ctx.deadline);
}

// Leader: sum = own src, then each member's segments added in rank order as
// they arrive.
Status sum_at_leader(AlgoContext &ctx, const void *src, DType t, const Segments &seg, float *sum) {
  Transport &tr = ctx.transport;
  const int members = tr.size();
  ctx.scratch.resize(size_t(members - 1) * seg.count() * dtype_size(t));
  RequestSet recvs(tr, members, [&](size_t) { return seg.number(); });
  auto landing = [&](int member, size_t k) {
    return ctx.scratch.data() +
           (size_t(member - 1) * seg.count() + seg.at(k).begin) * dtype_size(t);
  };
  for (int m = 1; m < members; ++m)
    for (size_t k = 0; k < seg.number(); ++k)
      BAGUA_TRY(tr.irecv(landing(m, k), seg.at(k).count * dtype_size(t), m,
                         ctx.tags.at(uint32_t(k)), &recvs.row(m)[k]));
  load_as_float(src, t, seg.count(), sum);
  for (size_t k = 0; k < seg.number(); ++k)
    for (int m = 1; m < members; ++m) {
      BAGUA_TRY(wait(tr, recvs.row(m)[k], ctx.deadline));
      add_as_float(landing(m, k), t, seg.at(k).count, sum + seg.at(k).begin);
    }
  return BAGUA_SUCCESS;
}

}  // namespace

Status node_reduce_to_leader(AlgoContext &ctx, const void *src, DType t, size_t count, float *sum) {
  const Segments seg = segments_of(ctx, t, count);
  if (ctx.transport.rank() != 0) return send_to_leader(ctx, src, t, seg);
  return sum_at_leader(ctx, src, t, seg, sum);
}

Status node_broadcast_from_leader(AlgoContext &ctx, void *buf, DType t, size_t count) {
  Transport &tr = ctx.transport;
  const Segments seg = segments_of(ctx, t, count);
  const int members = tr.size();
  const bool leader = tr.rank() == 0;
  RequestSet reqs(tr, leader ? members : 1, [&](size_t) { return seg.number(); });
  // The leader sends each segment to every member; members receive them.
  for (size_t k = 0; k < seg.number(); ++k) {
    unsigned char *at = const_cast<unsigned char *>(byte_at(buf, t, seg.at(k).begin));
    const size_t bytes = seg.at(k).count * dtype_size(t);
    if (!leader) {
      BAGUA_TRY(tr.irecv(at, bytes, 0, ctx.tags.at(uint32_t(k)), &reqs.row(0)[k]));
      continue;
    }
    for (int m = 1; m < members; ++m)
      BAGUA_TRY(tr.isend(at, bytes, m, ctx.tags.at(uint32_t(k)), &reqs.row(m)[k]));
  }
  for (size_t row = 0; row < reqs.rows(); ++row)
    BAGUA_TRY(wait_all(tr, reqs.row(row), ctx.deadline));
  return BAGUA_SUCCESS;
}

}  // namespace bagua
