#include "collectives.hpp"

#include <cstring>

#include "request_set.hpp"
#include "ring_plan.hpp"

namespace bagua {
namespace {

unsigned char *block_at(const void *base, int i, size_t block) {
  return static_cast<unsigned char *>(const_cast<void *>(base)) + size_t(i) * block;
}

void copy_unless_same(void *dst, const void *src, size_t bytes) {
  if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
}

// One step of a schedule: receive from `from` and send to `to` at once, and
// wait for both (a pair may be the same rank).
Status exchange(AlgoContext &ctx, uint32_t step, const void *out, size_t out_bytes, int to,
                void *in, size_t in_bytes, int from) {
  Transport &t = ctx.transport;
  RequestSet reqs(t, 1, [](size_t) { return 2; });
  BAGUA_TRY(t.irecv(in, in_bytes, from, ctx.tags.at(step), &reqs.row(0)[0]));
  BAGUA_TRY(t.isend(out, out_bytes, to, ctx.tags.at(step), &reqs.row(0)[1]));
  return wait_all(t, reqs.row(0), ctx.deadline);
}

Status send_one(AlgoContext &ctx, uint32_t step, const void *buf, size_t bytes, int to) {
  Request req;
  BAGUA_TRY(ctx.transport.isend(buf, bytes, to, ctx.tags.at(step), &req));
  return wait(ctx.transport, req, ctx.deadline);
}

Status recv_one(AlgoContext &ctx, uint32_t step, void *buf, size_t bytes, int from) {
  Request req;
  BAGUA_TRY(ctx.transport.irecv(buf, bytes, from, ctx.tags.at(step), &req));
  return wait(ctx.transport, req, ctx.deadline);
}

// The header of a point-to-point message: its user tag and payload size.
struct Header {
  uint64_t tag;
  uint64_t bytes;
};
constexpr uint32_t kHeaderStep = 0, kPayloadStep = 1;

}  // namespace

Status barrier_dissemination(AlgoContext &ctx) {
  const int n = ctx.transport.size(), r = ctx.transport.rank();
  unsigned char token = 1, incoming = 0;
  uint32_t round = 0;
  // Round k reaches 2^k ranks further: after ceil(log2 n) rounds every rank
  // has heard (through a chain) from every other.
  for (int dist = 1; dist < n; dist *= 2, ++round)
    BAGUA_TRY(exchange(ctx, round, &token, 1, ring_mod(r + dist, n), &incoming, 1,
                       ring_mod(r - dist, n)));
  return BAGUA_SUCCESS;
}

Status bcast_binomial(AlgoContext &ctx, void *buf, size_t bytes, int root) {
  const int n = ctx.transport.size();
  const int me = ring_mod(ctx.transport.rank() - root, n);  // rank relative to root
  int mask = 1;
  // Find the parent: the relative rank without its lowest set bit.
  for (; mask < n; mask *= 2)
    if (me & mask) {
      BAGUA_TRY(recv_one(ctx, 0, buf, bytes, ring_mod(me - mask + root, n)));
      break;
    }
  // Send to the children: me + 2^j for every 2^j below the bit found above.
  for (mask /= 2; mask > 0; mask /= 2)
    if (me + mask < n) BAGUA_TRY(send_one(ctx, 0, buf, bytes, ring_mod(me + mask + root, n)));
  return BAGUA_SUCCESS;
}

Status allgather_ring(AlgoContext &ctx, const void *own, void *recv, size_t block) {
  const int n = ctx.transport.size(), r = ctx.transport.rank();
  copy_unless_same(block_at(recv, r, block), own, block);
  // Step g forwards block r - g to the right and receives block r - g - 1.
  for (int g = 0; g + 1 < n; ++g) {
    const int out = ring_mod(r - g, n), in = ring_mod(r - g - 1, n);
    BAGUA_TRY(exchange(ctx, uint32_t(g), block_at(recv, out, block), block, ring_mod(r + 1, n),
                       block_at(recv, in, block), block, ring_mod(r - 1, n)));
  }
  return BAGUA_SUCCESS;
}

Status gather_direct(AlgoContext &ctx, const void *own, void *recv, size_t block, int root) {
  Transport &t = ctx.transport;
  const int n = t.size(), r = t.rank();
  if (r != root) return send_one(ctx, 0, own, block, root);
  copy_unless_same(block_at(recv, r, block), own, block);
  RequestSet reqs(t, 1, [&](size_t) { return size_t(n); });
  for (int i = 0; i < n; ++i)
    if (i != r)
      BAGUA_TRY(t.irecv(block_at(recv, i, block), block, i, ctx.tags.at(0), &reqs.row(0)[i]));
  return wait_all(t, reqs.row(0), ctx.deadline);
}

Status scatter_direct(AlgoContext &ctx, const void *send, void *own, size_t block, int root) {
  Transport &t = ctx.transport;
  const int n = t.size(), r = t.rank();
  if (r != root) return recv_one(ctx, 0, own, block, root);
  copy_unless_same(own, block_at(send, r, block), block);
  RequestSet reqs(t, 1, [&](size_t) { return size_t(n); });
  for (int i = 0; i < n; ++i)
    if (i != r)
      BAGUA_TRY(t.isend(block_at(send, i, block), block, i, ctx.tags.at(0), &reqs.row(0)[i]));
  return wait_all(t, reqs.row(0), ctx.deadline);
}

Status alltoall_pairwise(AlgoContext &ctx, const void *send, void *recv, size_t block) {
  const int n = ctx.transport.size(), r = ctx.transport.rank();
  if (send == recv) {
    ctx.scratch.assign(block_at(recv, 0, block), block_at(recv, n, block));
    send = ctx.scratch.data();
  }
  copy_unless_same(block_at(recv, r, block), block_at(send, r, block), block);
  // Step s pairs r with r + s (to) and r - s (from): every pair once.
  for (int s = 1; s < n; ++s) {
    const int to = ring_mod(r + s, n), from = ring_mod(r - s, n);
    BAGUA_TRY(exchange(ctx, uint32_t(s), block_at(send, to, block), block, to,
                       block_at(recv, from, block), block, from));
  }
  return BAGUA_SUCCESS;
}

Status Mailbox::send(AlgoContext &ctx, const void *buf, size_t bytes, int dest, int tag) {
  Transport &t = ctx.transport;
  const Header header{uint64_t(tag), bytes};
  RequestSet reqs(t, 1, [](size_t) { return 2; });
  BAGUA_TRY(t.isend(&header, sizeof header, dest, ctx.tags.at(kHeaderStep), &reqs.row(0)[0]));
  if (bytes > 0) BAGUA_TRY(t.isend(buf, bytes, dest, ctx.tags.at(kPayloadStep), &reqs.row(0)[1]));
  return wait_all(t, reqs.row(0), ctx.deadline);
}

Status Mailbox::take_kept(int source, int tag, void *buf, size_t bytes, bool *found) {
  std::deque<Message> &kept = kept_[source];
  *found = false;
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if (it->tag != tag) continue;
    *found = true;
    const size_t size = it->payload.size();
    copy_unless_same(buf, it->payload.data(), size == bytes ? bytes : 0);
    kept.erase(it);
    if (size == bytes) return BAGUA_SUCCESS;
    return fail(BAGUA_ERR_MISMATCH, "rank %d sent %zu bytes with tag %d; the receive expects %zu",
                source, size, tag, bytes);
  }
  return BAGUA_SUCCESS;
}

Status Mailbox::recv(AlgoContext &ctx, void *buf, size_t bytes, int source, int tag) {
  bool found = false;
  BAGUA_TRY(take_kept(source, tag, buf, bytes, &found));
  // Take messages from source in order, keeping those of other tags, until
  // one with this tag arrives.
  while (!found) {
    Header header{};
    BAGUA_TRY(recv_one(ctx, kHeaderStep, &header, sizeof header, source));
    found = header.tag == uint64_t(tag);
    if (found && header.bytes == bytes) {
      if (bytes > 0) BAGUA_TRY(recv_one(ctx, kPayloadStep, buf, bytes, source));
      return BAGUA_SUCCESS;
    }
    Message message{int(header.tag), Bytes(header.bytes)};
    if (header.bytes > 0)
      BAGUA_TRY(recv_one(ctx, kPayloadStep, message.payload.data(), header.bytes, source));
    kept_[source].push_back(std::move(message));
  }
  return take_kept(source, tag, buf, bytes, &found);
}

}  // namespace bagua
