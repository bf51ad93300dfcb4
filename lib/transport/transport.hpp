// The small interface every collective algorithm is written against:
// nonblocking tagged send/receive of bytes to a peer rank, completion tests,
// and deadline-bounded waits. Algorithms never learn which transport (MPI or
// UCX) carries their bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "../base/live_objects.hpp"
#include "../base/send_memory.hpp"
#include "../base/status.hpp"

namespace bagua {

// Message tags are opaque to the transport: it only checks them against its
// largest tag (MPI_TAG_UB for MPI). What the bits mean is decided above it
// (lib/core/tags.hpp).
using Tag = uint32_t;

// The point in time after which a wait gives up with BAGUA_ERR_TIMEOUT.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  static Deadline after_ms(int64_t ms) {
    return Deadline(Clock::now() + std::chrono::milliseconds(ms));
  }
  bool expired() const { return Clock::now() >= at_; }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

// One outstanding send or receive. The handle bytes belong to the transport.
struct Request {
  alignas(8) unsigned char handle[16] = {};
  const void *buffer = nullptr;  // what the request reads or writes
  size_t bytes = 0;
  int peer = -1;
  Tag tag = 0;
  bool active = false;  // posted and not yet completed
  bool is_recv = false;
};

class Transport {
 public:
  Transport(int rank, int size, Tag max_tag) : rank_(rank), size_(size), max_tag_(max_tag) {
    live_add(Live::transport, 1);
  }
  virtual ~Transport() { live_add(Live::transport, -1); }
  Transport(const Transport &) = delete;
  Transport &operator=(const Transport &) = delete;

  virtual const char *name() const = 0;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The largest tag a message may carry.
  Tag max_tag() const { return max_tag_; }

  // Starts sending `bytes` from `buf` to `peer`. `buf` must stay valid and
  // unchanged until the request completes. Messages with the same (peer, tag)
  // are delivered in the order they were sent.
  virtual Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) = 0;

  // Starts receiving exactly `bytes` into `buf` from `peer`; a message of a
  // different size completes with BAGUA_ERR_MISMATCH.
  virtual Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) = 0;

  // Drives progress; sets *done when `req` has completed (req->active false).
  virtual Status test(Request *req, bool *done) = 0;

  // Gives up on an incomplete request after a failure: receives are cancelled
  // where the transport allows it, and the request is never touched again. A
  // send still in flight is recorded with abandoned_send_add (its buffer must
  // outlive it: lib/base/send_memory.hpp).
  virtual void abandon(Request *req) = 0;

  // Cancels a receive that no peer's message will ever match (the protocol
  // guarantees it: a controller's inbox once every rank has left). Unlike
  // abandon(), it does not make late messages possible. By default it
  // abandons (transports whose abandoned receives leave nothing late).
  virtual void cancel_unmatched(Request *req) { abandon(req); }

  // True once a request failed or was abandoned: a send of ours may still be
  // in flight, or a peer's message may still arrive unmatched (the rest of a
  // call this rank gave up, or the remaining pieces of a message of another
  // size). The communicator under this transport must then never be freed,
  // or MPI could reuse its context for a new one and deliver those late
  // bytes there.
  virtual bool late_messages_possible() const { return late_messages_; }

 protected:
  // Records an abandoned send still in flight (lib/base/send_memory.hpp).
  void note_abandoned_send(const Request &req) {
    abandoned_send_add(req.buffer, req.bytes);
    late_messages_ = true;
  }
  // Records a request that failed or was given up.
  void note_failed_request() { late_messages_ = true; }

  // Checks the peer and tag of a request being posted and records them.
  Status begin_request(const void *buffer, size_t bytes, int peer, Tag tag, bool is_recv,
                       Request *req) const {
    if (peer < 0 || peer >= size_ || tag > max_tag_)
      return fail(BAGUA_ERR_INTERNAL, "bad peer %d or tag 0x%x", peer, tag);
    req->buffer = buffer;
    req->bytes = bytes;
    req->peer = peer;
    req->tag = tag;
    req->is_recv = is_recv;
    return BAGUA_SUCCESS;
  }

 private:
  int rank_;
  int size_;
  Tag max_tag_;
  bool late_messages_ = false;
};

// Waits for one request, failing with BAGUA_ERR_TIMEOUT at the deadline.
Status wait(Transport &t, Request &req, const Deadline &deadline);

// Waits for all active requests in `reqs`. On failure the remaining ones are
// abandoned, so the caller may return at once.
Status wait_all(Transport &t, std::span<Request> reqs, const Deadline &deadline);

// Abandons every active request in `reqs` (used on error paths).
void abandon_all(Transport &t, std::span<Request> reqs);

}  // namespace bagua
