// A Transport shared by several threads: every call into the wrapped
// transport is serialised by one mutex. The bucket engine runs each in-flight
// collective on its own thread; the UCX transport's worker is created
// UCS_THREAD_MODE_SERIALIZED, so its calls must not overlap. The MPI transport
// would be safe without the lock under MPI_THREAD_MULTIPLE; one uniform rule
// keeps the engine independent of the transport, and the lock is held only
// for the duration of a post or a test, never across a wait.
#pragma once

#include <memory>
#include <mutex>

#include "transport.hpp"

namespace bagua {

class LockedTransport final : public Transport {
 public:
  explicit LockedTransport(std::unique_ptr<Transport> inner)
      : Transport(inner->rank(), inner->size(), inner->max_tag()), inner_(std::move(inner)) {}

  const char *name() const override { return inner_->name(); }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    std::lock_guard lock(mutex_);
    return inner_->isend(buf, bytes, peer, tag, req);
  }
  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    std::lock_guard lock(mutex_);
    return inner_->irecv(buf, bytes, peer, tag, req);
  }
  Status test(Request *req, bool *done) override {
    std::lock_guard lock(mutex_);
    return inner_->test(req, done);
  }
  void abandon(Request *req) override {
    std::lock_guard lock(mutex_);
    inner_->abandon(req);
  }
  void cancel_unmatched(Request *req) override {
    std::lock_guard lock(mutex_);
    inner_->cancel_unmatched(req);
  }
  bool late_messages_possible() const override {
    std::lock_guard lock(mutex_);
    return inner_->late_messages_possible();
  }

 private:
  std::unique_ptr<Transport> inner_;
  mutable std::mutex mutex_;
};

}  // namespace bagua
