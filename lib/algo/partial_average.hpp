// The partial-reduce data plane: a group's members average their buffers with
// the exact allreduce algorithms, or the q8 compressed allreduce, run on a
// view of the transport restricted to the group (no communicator is created
// per group).
#pragma once

#include <span>

#include "allreduce.hpp"
#include "compressed.hpp"

namespace bagua {

// `base` seen by one group: local rank i is members[i] of base.
class SubgroupTransport final : public Transport {
 public:
  SubgroupTransport(Transport &base, std::span<const int> members, int local_rank)
      : Transport(local_rank, static_cast<int>(members.size())), base_(base), members_(members) {}

  const char *name() const override { return base_.name(); }
  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    return base_.isend(buf, bytes, members_[static_cast<size_t>(peer)], tag, req);
  }
  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    return base_.irecv(buf, bytes, members_[static_cast<size_t>(peer)], tag, req);
  }
  Status test(Request *req, bool *done) override { return base_.test(req, done); }
  void abandon(Request *req) override { base_.abandon(req); }

 private:
  Transport &base_;
  std::span<const int> members_;
};

struct GroupAverageArgs {
  const void *src;
  void *dst;
  size_t count;
  DType dtype;
  // This member's weight, or a negative value for uniform weights (the exact
  // sum divided once by the group size).
  double weight;
  bool use_ring;  // ring (large buffers) or recursive doubling
};

// dst = sum over members of weight_i * src_i; ctx.transport is the group's view.
Status group_average(AlgoContext &ctx, const GroupAverageArgs &args);

// dst = the uniform average of the members' src through `codec` (the
// compressed allreduce, ByteGrad): bit-identical on every member, within the
// codec's error of the exact average. Not for f64 (the codecs read halves and
// float32 only).
Status group_average_compressed(AlgoContext &ctx, ChunkCodec &codec, const void *src, void *dst,
                                size_t count, DType dtype);

}  // namespace bagua
