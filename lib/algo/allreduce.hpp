// Exact allreduce algorithms, written against the Transport interface.
#pragma once

#include <vector>

#include "../base/dtype.hpp"
#include "../transport/transport.hpp"

namespace bagua {

// One allreduce: src (may equal dst for in-place) reduced into dst on every rank.
struct AllreduceArgs {
  const void *src;
  void *dst;
  size_t count;
  DType dtype;
  ReduceOp op;
};

// Context shared by every algorithm call: where to send, how to tag, until when
// to wait, and a reusable scratch area owned by the caller.
struct AlgoContext {
  Transport &transport;
  TagSpace tags;
  Deadline deadline;
  std::vector<unsigned char> &scratch;
  size_t segment_bytes;  // pipeline granularity of ring algorithms
};

// Ring reduce-scatter followed by ring allgather, pipelined per segment:
// 2(n-1)/n of the buffer sent per rank (bandwidth-optimal).
Status allreduce_ring(AlgoContext &ctx, const AllreduceArgs &args);

// Recursive doubling with folding of the ranks above the largest power of two:
// ceil(log2 n) (+2) rounds of whole-buffer exchange (latency-optimal).
Status allreduce_recursive_doubling(AlgoContext &ctx, const AllreduceArgs &args);

}  // namespace bagua
