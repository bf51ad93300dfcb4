#include "loopback_transport.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace bagua {
namespace {

// A receive while it waits for its message; owned by the request's handle.
struct PostedRecv {
  enum class State { waiting, done, mismatch };
  void *buf;
  size_t bytes;
  State state = State::waiting;
  size_t arrived_bytes = 0;  // size of the message that completed it
};

PostedRecv *&posted_of(Request *req) {
  static_assert(sizeof(PostedRecv *) <= sizeof(req->handle));
  return *reinterpret_cast<PostedRecv **>(req->handle);
}

// Completes `recv` with a message: its bytes when the sizes agree, otherwise
// a mismatch that leaves the receive buffer untouched.
void complete(PostedRecv *recv, const void *data, size_t bytes) {
  recv->arrived_bytes = bytes;
  if (bytes != recv->bytes) {
    recv->state = PostedRecv::State::mismatch;
    return;
  }
  if (bytes > 0) std::memcpy(recv->buf, data, bytes);
  recv->state = PostedRecv::State::done;
}

}  // namespace

class LoopbackEndpoint final : public Transport {
 public:
  LoopbackEndpoint(std::vector<std::unique_ptr<LoopbackEndpoint>> &all, int rank, int size)
      : Transport(rank, size), all_(all) {}

  const char *name() const override { return "loopback"; }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(bytes, peer, tag, false, req));
    all_[static_cast<size_t>(peer)]->deliver(rank(), tag, buf, bytes);
    posted_of(req) = nullptr;
    req->active = true;
    return BAGUA_SUCCESS;
  }

  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(bytes, peer, tag, true, req));
    auto *recv = new PostedRecv{buf, bytes};
    {
      std::lock_guard lock(mutex_);
      Queue &q = queues_[key(peer, tag)];
      if (q.messages.empty()) {
        q.receives.push_back(recv);
      } else {
        complete(recv, q.messages.front().data(), q.messages.front().size());
        q.messages.pop_front();
        drop_if_empty(peer, tag);
      }
    }
    posted_of(req) = recv;
    req->active = true;
    return BAGUA_SUCCESS;
  }

  Status test(Request *req, bool *done) override {
    *done = !req->active;
    if (*done) return BAGUA_SUCCESS;
    PostedRecv *recv = posted_of(req);
    if (recv != nullptr) {
      std::lock_guard lock(mutex_);
      if (recv->state == PostedRecv::State::waiting) return BAGUA_SUCCESS;
    }
    *done = true;
    req->active = false;
    if (recv == nullptr) return BAGUA_SUCCESS;
    const bool mismatch = recv->state == PostedRecv::State::mismatch;
    const size_t arrived = recv->arrived_bytes;
    delete recv;
    if (!mismatch) return BAGUA_SUCCESS;
    return fail(BAGUA_ERR_MISMATCH,
                "expected %zu bytes from rank %d (tag 0x%x) but it sent %zu: do all ranks pass "
                "the same count and datatype?",
                req->bytes, req->peer, req->tag, arrived);
  }

  void abandon(Request *req) override {
    if (!req->active) return;
    req->active = false;
    PostedRecv *recv = posted_of(req);
    if (recv == nullptr) return;  // a send: its bytes were copied at isend
    {
      std::lock_guard lock(mutex_);
      if (recv->state == PostedRecv::State::waiting) {
        std::deque<PostedRecv *> &posted = queues_[key(req->peer, req->tag)].receives;
        posted.erase(std::find(posted.begin(), posted.end(), recv));
        drop_if_empty(req->peer, req->tag);
      }
    }
    delete recv;
  }

  // Called by the sender's thread: hands the message to the oldest matching
  // receive, or keeps a copy until one is posted.
  void deliver(int source, Tag tag, const void *buf, size_t bytes) {
    std::lock_guard lock(mutex_);
    Queue &q = queues_[key(source, tag)];
    if (q.receives.empty()) {
      const auto *data = static_cast<const unsigned char *>(buf);
      q.messages.emplace_back(data, data + bytes);
      return;
    }
    complete(q.receives.front(), buf, bytes);
    q.receives.pop_front();
    drop_if_empty(source, tag);
  }

 private:
  // Messages that arrived before their receive, or receives posted before
  // their message: at most one of the two lists is non-empty.
  struct Queue {
    std::deque<std::vector<unsigned char>> messages;
    std::deque<PostedRecv *> receives;
  };

  static uint64_t key(int peer, Tag tag) { return (uint64_t(uint32_t(peer)) << 32) | tag; }

  // Tags are rarely reused, so drained queues are removed.
  void drop_if_empty(int peer, Tag tag) {
    const auto it = queues_.find(key(peer, tag));
    if (it->second.messages.empty() && it->second.receives.empty()) queues_.erase(it);
  }

  std::vector<std::unique_ptr<LoopbackEndpoint>> &all_;
  std::mutex mutex_;
  std::unordered_map<uint64_t, Queue> queues_;
};

LoopbackFabric::LoopbackFabric(int ranks) {
  endpoints_.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    endpoints_.push_back(std::make_unique<LoopbackEndpoint>(endpoints_, r, ranks));
}

LoopbackFabric::~LoopbackFabric() = default;

Transport &LoopbackFabric::endpoint(int rank) { return *endpoints_[static_cast<size_t>(rank)]; }

}  // namespace bagua
