// A view of a transport restricted to a group of its ranks, so any
// algorithm runs among a partial-reduce group with no communicator created
// per group.
#pragma once

#include <span>

#include "../transport/transport.hpp"

namespace bagua {

// `base` seen by one group: local rank i is members[i] of base.
class SubgroupTransport final : public Transport {
 public:
  SubgroupTransport(Transport &base, std::span<const int> members, int local_rank)
      : Transport(local_rank, static_cast<int>(members.size()), base.max_tag()),
        base_(base),
        members_(members) {}

  const char *name() const override { return base_.name(); }
  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    return base_.isend(buf, bytes, members_[static_cast<size_t>(peer)], tag, req);
  }
  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    return base_.irecv(buf, bytes, members_[static_cast<size_t>(peer)], tag, req);
  }
  Status test(Request *req, bool *done) override { return base_.test(req, done); }
  void abandon(Request *req) override { base_.abandon(req); }
  bool late_messages_possible() const override { return base_.late_messages_possible(); }

 private:
  Transport &base_;
  std::span<const int> members_;
};

}  // namespace bagua
