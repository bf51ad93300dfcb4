// Exact allreduce algorithms, written against the Transport interface.
#pragma once

#include "../base/dtype.hpp"
#include "context.hpp"

namespace bagua {

// One allreduce: src (may equal dst for in-place) reduced into dst on every rank.
struct AllreduceArgs {
  const void *src;
  void *dst;
  size_t count;
  DType dtype;
  ReduceOp op;
};

// Ring reduce-scatter followed by ring allgather, pipelined per segment:
// 2(n-1)/n of the buffer sent per rank (bandwidth-optimal).
Status allreduce_ring(AlgoContext &ctx, const AllreduceArgs &args);

// The ring's reduce-scatter phase alone: rank r ends with chunk r of the
// reduction (RingPlan's chunks of count elements among n) in dst, at its
// place in the buffer; dst's other chunks are scratch.
Status reduce_scatter_ring(AlgoContext &ctx, const AllreduceArgs &args);

// Recursive doubling with folding of the ranks above the largest power of two:
// ceil(log2 n) (+2) rounds of whole-buffer exchange (latency-optimal).
Status allreduce_recursive_doubling(AlgoContext &ctx, const AllreduceArgs &args);

// Bytes `rank` of `ranks` sends in one call of each (for the trainer's
// accounting and the advisor; every segment header included).
size_t ring_bytes_sent(size_t count, DType t, int rank, int ranks);
size_t recursive_doubling_bytes_sent(size_t count, DType t, int rank, int ranks);

// The ranks recursive doubling exchanges among: the largest power of two p
// <= ranks (ranks >= 1).
int recursive_doubling_group(int ranks);
// Its steps among `ranks`: log2 p exchanges, and 2 more (fold in, result
// back) when ranks > p.
int recursive_doubling_steps(int ranks);

}  // namespace bagua
