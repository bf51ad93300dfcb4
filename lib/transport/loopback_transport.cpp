#include "loopback_transport.hpp"

#include <cstring>
#include <map>
#include <memory_resource>
#include <mutex>
#include <tuple>

namespace bagua {
namespace {

// A posted receive until test() or abandon() retires it. The handle holds a
// pointer to it; the records are pooled per endpoint, so a message costs no
// allocation once the pools have grown (allocations are slow under ASan with
// full unwinding).
struct PostedRecv {
  enum class State { waiting, done, mismatch };
  uint64_t number;  // its key in the endpoint's receives_
  void *buf;
  size_t bytes;
  State state;
  size_t arrived_bytes;  // size of the message that completed it
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
      : Transport(rank, size, kLoopbackMaxTag), all_(all) {}

  const char *name() const override { return "loopback"; }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, false, req));
    all_[static_cast<size_t>(peer)]->deliver(rank(), tag, buf, bytes);
    posted_of(req) = nullptr;
    req->active = true;
    return BAGUA_SUCCESS;
  }

  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, true, req));
    std::lock_guard lock(mutex_);
    PostedRecv *recv = new_recv();
    *recv = {next_number_++, buf, bytes, PostedRecv::State::waiting, 0};
    const auto it = oldest(messages_, peer, tag);
    if (it == messages_.end()) {
      receives_.emplace(Key{peer, tag, recv->number}, recv);
    } else {
      complete(recv, it->second.data(), it->second.size());
      spare_bytes_.push_back(std::move(it->second));
      messages_.erase(it);
    }
    posted_of(req) = recv;
    req->active = true;
    return BAGUA_SUCCESS;
  }

  Status test(Request *req, bool *done) override {
    *done = !req->active;
    if (*done) return BAGUA_SUCCESS;
    PostedRecv *recv = posted_of(req);
    bool mismatch = false;
    size_t arrived = 0;
    if (recv != nullptr) {
      std::lock_guard lock(mutex_);
      if (recv->state == PostedRecv::State::waiting) return BAGUA_SUCCESS;
      mismatch = recv->state == PostedRecv::State::mismatch;
      arrived = recv->arrived_bytes;
      spare_recvs_.push_back(recv);
    }
    *done = true;
    req->active = false;
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
    std::lock_guard lock(mutex_);
    if (recv->state == PostedRecv::State::waiting)
      receives_.erase(Key{req->peer, req->tag, recv->number});
    spare_recvs_.push_back(recv);
  }

  // Called by the sender's thread: hands the message to the oldest matching
  // receive, or keeps a copy until one is posted.
  void deliver(int source, Tag tag, const void *buf, size_t bytes) {
    std::lock_guard lock(mutex_);
    const auto it = oldest(receives_, source, tag);
    if (it != receives_.end()) {
      complete(it->second, buf, bytes);
      receives_.erase(it);
      return;
    }
    std::vector<unsigned char> copy;
    if (!spare_bytes_.empty()) {
      copy = std::move(spare_bytes_.back());
      spare_bytes_.pop_back();
    }
    const auto *data = static_cast<const unsigned char *>(buf);
    copy.assign(data, data + bytes);
    messages_.emplace(Key{source, tag, next_number_++}, std::move(copy));
  }

 private:
  // (source, tag, arrival or posting number): the first entry at or after
  // (source, tag, 0) is the oldest of that pair, so each pair stays FIFO.
  using Key = std::tuple<int, Tag, uint64_t>;

  template <class Map>
  static typename Map::iterator oldest(Map &entries, int source, Tag tag) {
    const auto it = entries.lower_bound(Key{source, tag, 0});
    const bool same =
        it != entries.end() && std::get<0>(it->first) == source && std::get<1>(it->first) == tag;
    return same ? it : entries.end();
  }

  PostedRecv *new_recv() {
    if (spare_recvs_.empty()) {
      recv_pool_.push_back(std::make_unique<PostedRecv>());
      return recv_pool_.back().get();
    }
    PostedRecv *recv = spare_recvs_.back();
    spare_recvs_.pop_back();
    return recv;
  }

  std::vector<std::unique_ptr<LoopbackEndpoint>> &all_;
  std::mutex mutex_;
  // Map nodes come from this pool, under mutex_.
  std::pmr::unsynchronized_pool_resource pool_;
  // Messages that arrived before their receive, and receives posted before
  // their message (at most one of the two holds a given pair).
  std::pmr::map<Key, std::vector<unsigned char>> messages_{&pool_};
  std::pmr::map<Key, PostedRecv *> receives_{&pool_};
  uint64_t next_number_ = 0;
  std::vector<std::vector<unsigned char>> spare_bytes_;  // buffers of received messages
  std::vector<std::unique_ptr<PostedRecv>> recv_pool_;
  std::vector<PostedRecv *> spare_recvs_;  // retired records of recv_pool_
};

LoopbackFabric::LoopbackFabric(int ranks) {
  endpoints_.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    endpoints_.push_back(std::make_unique<LoopbackEndpoint>(endpoints_, r, ranks));
}

LoopbackFabric::~LoopbackFabric() = default;

Transport &LoopbackFabric::endpoint(int rank) { return *endpoints_[static_cast<size_t>(rank)]; }

}  // namespace bagua
