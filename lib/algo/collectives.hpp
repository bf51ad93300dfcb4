// Data-movement collectives and tagged point-to-point messages, written
// against the Transport interface. They move bytes: a "block" is one rank's
// share (the same size on every rank), and nothing here knows element types.
#pragma once

#include <cstddef>
#include <deque>
#include <map>

#include "context.hpp"

namespace bagua {

// Dissemination barrier: in round k (of ceil(log2 n)) rank r sends a token to
// r + 2^k and waits for the one of r - 2^k; no rank leaves before every rank
// has entered.
Status barrier_dissemination(AlgoContext &ctx);

// Binomial-tree broadcast of `bytes` at buf from `root`: ceil(log2 n) rounds.
Status bcast_binomial(AlgoContext &ctx, void *buf, size_t bytes, int root);

// Ring allgather: `recv` holds n blocks of `block` bytes; this rank's block r
// is copied there from `own` (nothing when own is already recv's block r),
// then n - 1 steps pass the blocks to the right.
Status allgather_ring(AlgoContext &ctx, const void *own, void *recv, size_t block);

// Direct gather: every rank sends `own` to root, which stores rank i's block
// at recv + i * block (its own copied unless already there).
Status gather_direct(AlgoContext &ctx, const void *own, void *recv, size_t block, int root);

// Direct scatter: root sends block i of `send` to rank i, which stores it in
// `own` (root copies its own block unless it is already there).
Status scatter_direct(AlgoContext &ctx, const void *send, void *own, size_t block, int root);

// Pairwise exchange: in step s (1..n-1) rank r sends block r + s to rank
// r + s and receives rank r - s's block r. send == recv is in place (the
// input is copied into ctx.scratch first).
Status alltoall_pairwise(AlgoContext &ctx, const void *send, void *recv, size_t block);

// Point-to-point messages with a user tag, over one ordered channel per peer
// (a header step and a payload step of ctx.tags). A receive for (source,
// tag) takes the earliest message of that tag from source, as MPI matches:
// messages of other tags that arrive first are kept here until a receive
// asks for them. One Mailbox per transport and tag slot.
class Mailbox {
 public:
  // Blocking send of `bytes` at buf to `dest` with `tag`.
  Status send(AlgoContext &ctx, const void *buf, size_t bytes, int dest, int tag);
  // Blocking receive of exactly `bytes` from `source` with `tag`; a message
  // of another size fails with BAGUA_ERR_MISMATCH.
  Status recv(AlgoContext &ctx, void *buf, size_t bytes, int source, int tag);

 private:
  struct Message {
    int tag;
    Bytes payload;
  };
  // Takes the earliest kept message of (source, tag) into buf; *found false
  // when there is none.
  Status take_kept(int source, int tag, void *buf, size_t bytes, bool *found);

  std::map<int, std::deque<Message>> kept_;  // by source, in arrival order
};

}  // namespace bagua
