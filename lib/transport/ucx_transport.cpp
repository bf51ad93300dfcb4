// Point-to-point over UCP tag matching: one context and one worker per
// transport, endpoints to every rank (self included) created eagerly.
#include "ucx_transport.hpp"

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace bagua {
namespace {

using Clock = std::chrono::steady_clock;

// How long teardown and abandon() keep progressing UCX for requests that are
// waiting on a peer: long enough for a live peer to answer, short enough that
// a dead one never hangs MPI_Finalize.
constexpr auto kDrainLimit = std::chrono::seconds(1);

// UCP tags carry no source, so the sender's rank goes in the upper 32 bits and
// the bagua tag in the lower ones; receives match all 64 bits (exact peer).
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

ucp_tag_t ucp_tag(int sender, Tag tag) {
  return (static_cast<ucp_tag_t>(static_cast<uint32_t>(sender)) << 32) | tag;
}

// Request::handle holds the UCP request of an operation in flight, or
// nullptr for a send that completed as it was posted.
void *&ucx_request(Request *req) {
  static_assert(sizeof(void *) <= sizeof(req->handle));
  return *reinterpret_cast<void **>(req->handle);
}

Status ucx_error(ucs_status_t status, const char *what) {
  return fail(BAGUA_ERR_TRANSPORT, "UCX %s: %s", what, ucs_status_string(status));
}

Status ucx_error(ucs_status_t status, const char *what, const Request &req) {
  return fail(BAGUA_ERR_TRANSPORT, "UCX %s (peer %d, %zu bytes): %s", what, req.peer, req.bytes,
              ucs_status_string(status));
}

// `got` describes what arrived: "a larger message" or "<n> bytes".
Status mismatch(const Request &req, const char *got) {
  return fail(BAGUA_ERR_MISMATCH,
              "expected %zu bytes from rank %d (tag 0x%x) but it sent %s: do all ranks pass the "
              "same count and datatype?",
              req.bytes, req.peer, req.tag, got);
}

// The outcome of a completed request; a receive reports its length.
Status outcome(const Request &req, ucs_status_t status, size_t received) {
  if (status == UCS_ERR_MESSAGE_TRUNCATED) return mismatch(req, "a larger message");
  if (status != UCS_OK) return ucx_error(status, req.is_recv ? "receive" : "send", req);
  if (received != req.bytes) {
    char got[32];
    std::snprintf(got, sizeof got, "%zu bytes", received);
    return mismatch(req, got);
  }
  return BAGUA_SUCCESS;
}

// Creation is collective: every rank learns whether all ranks got this far,
// so a local failure never leaves the others blocked in the next exchange.
Status agree(Exchange &exchange, Status local) {
  const int64_t failed = local != BAGUA_SUCCESS;
  int64_t any_failed = 0;
  BAGUA_TRY(exchange.max({&failed, 1}, {&any_failed, 1}, "setting up UCX"));
  if (local != BAGUA_SUCCESS) return local;
  if (any_failed) return fail(BAGUA_ERR_TRANSPORT, "UCX setup failed on another rank");
  return BAGUA_SUCCESS;
}

class UcxTransport final : public Transport {
 public:
  // UCP tags have room for a full 32-bit bagua tag beside the sender's rank.
  UcxTransport(int rank, int size) : Transport(rank, size, 0xffffffffu) {}

  ~UcxTransport() override {
    if (worker_ != nullptr) {
      close_endpoints();
      ucp_worker_destroy(worker_);
    }
    if (context_ != nullptr) ucp_cleanup(context_);
  }

  const char *name() const override { return "ucx"; }

  // Collective over `exchange`: all ranks succeed or all fail.
  Status init(Exchange &exchange) {
    BAGUA_TRY(agree(exchange, open_worker()));
    std::vector<char> addresses;
    std::vector<int> offsets;
    BAGUA_TRY(exchange_addresses(exchange, &addresses, &offsets));
    return agree(exchange, connect(addresses, offsets));
  }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, false, req));
    const ucp_request_param_t param{};
    const ucs_status_ptr_t r =
        ucp_tag_send_nbx(endpoints_[peer], buf, bytes, ucp_tag(rank(), tag), &param);
    return posted(r, "tag_send", req);
  }

  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, true, req));
    // Always take a request: a receive that completes at once would not
    // report the length of its message (UCX 1.13 leaves recv_info unset).
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    const ucs_status_ptr_t r =
        ucp_tag_recv_nbx(worker_, buf, bytes, ucp_tag(peer, tag), kFullMask, &param);
    return posted(r, "tag_recv", req);
  }

  Status test(Request *req, bool *done) override {
    ucp_worker_progress(worker_);
    void *&request = ucx_request(req);
    ucs_status_t status = UCS_OK;
    size_t received = req->bytes;
    if (request != nullptr) {
      ucp_tag_recv_info_t info{};
      status = req->is_recv ? ucp_tag_recv_request_test(request, &info)
                            : ucp_request_check_status(request);
      *done = status != UCS_INPROGRESS;
      if (!*done) return BAGUA_SUCCESS;
      if (req->is_recv) received = info.length;
      ucp_request_free(request);
      request = nullptr;
    }
    *done = true;
    req->active = false;
    return outcome(*req, status, received);
  }

  void abandon(Request *req) override {
    if (!req->active) return;
    req->active = false;
    void *request = ucx_request(req);
    if (request == nullptr) return;
    if (req->is_recv) {
      // A receive that already matched a rendezvous message cannot be
      // cancelled; give it a bounded chance to finish so UCX stops writing
      // into the caller's buffer before we return.
      ucp_request_cancel(worker_, request);
      drain({&request, 1});
    }
    // A send still in flight completes on its own, reading its buffer
    // whenever the peer comes (lib/base/send_memory.hpp), and is released then.
    if (!req->is_recv) note_abandoned_send(*req);
    ucp_request_free(request);
  }

 private:
  static Status posted(ucs_status_ptr_t r, const char *what, Request *req) {
    if (UCS_PTR_IS_ERR(r)) return ucx_error(UCS_PTR_STATUS(r), what, *req);
    ucx_request(req) = r;
    req->active = true;
    return BAGUA_SUCCESS;
  }

  // Context and worker. ucp_config_read takes UCX_* variables (UCX_TLS among
  // them) from the environment; unset ones keep UCX's defaults.
  Status open_worker() {
    ucp_config_t *config = nullptr;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) return ucx_error(status, "config_read");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    params.mt_workers_shared = 0;
    params.estimated_num_eps = static_cast<size_t>(size());
    status = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (status != UCS_OK) return ucx_error(status, "init");
    // Serialized, not multi-threaded: a bagua communicator is used by one
    // thread at a time (see bagua.h) and owns this worker alone, so UCX can
    // skip its locks.
    ucp_worker_params_t worker_params{};
    worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    status = ucp_worker_create(context_, &worker_params, &worker_);
    if (status != UCS_OK) return ucx_error(status, "worker_create");
    return BAGUA_SUCCESS;
  }

  // Gathers every rank's worker address; rank p's lies at (*offsets)[p].
  Status exchange_addresses(Exchange &exchange, std::vector<char> *all, std::vector<int> *offsets) {
    ucp_address_t *address = nullptr;
    size_t length = 0;
    const ucs_status_t status = ucp_worker_get_address(worker_, &address, &length);
    BAGUA_TRY(agree(exchange,
                    status == UCS_OK ? BAGUA_SUCCESS : ucx_error(status, "worker_get_address")));
    const Status s = exchange.allgather({reinterpret_cast<const char *>(address), length},
                                        "exchanging UCX worker addresses", all, offsets);
    ucp_worker_release_address(worker_, address);
    return s;
  }

  Status connect(const std::vector<char> &addresses, const std::vector<int> &offsets) {
    endpoints_.reserve(offsets.size());
    for (const int offset : offsets) {
      ucp_ep_params_t params{};
      params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
      params.address = reinterpret_cast<const ucp_address_t *>(addresses.data() + offset);
      ucp_ep_h ep = nullptr;
      const ucs_status_t status = ucp_ep_create(worker_, &params, &ep);
      if (status != UCS_OK) return ucx_error(status, "ep_create");
      endpoints_.push_back(ep);
    }
    return BAGUA_SUCCESS;
  }

  // Progresses the worker until every request completes or kDrainLimit
  // passes.
  void drain(std::span<void *const> requests) {
    const Clock::time_point give_up = Clock::now() + kDrainLimit;
    for (;;) {
      ucp_worker_progress(worker_);
      bool pending = false;
      for (void *r : requests) pending |= ucp_request_check_status(r) == UCS_INPROGRESS;
      if (!pending || Clock::now() >= give_up) return;
      std::this_thread::yield();
    }
  }

  // Closes in flush mode: pending sends are delivered before the endpoints
  // go. Peers that are gone or stuck would keep that from ever completing, so
  // after kDrainLimit the remaining closes are abandoned and ucp_worker_destroy
  // releases those endpoints without waiting for their peers.
  void close_endpoints() {
    std::vector<void *> closing;
    const ucp_request_param_t param{};  // no UCP_EP_CLOSE_FLAG_FORCE: flush mode
    for (ucp_ep_h ep : endpoints_) {
      const ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &param);
      if (UCS_PTR_IS_PTR(r)) closing.push_back(r);
    }
    endpoints_.clear();
    drain(closing);
    for (void *r : closing) ucp_request_free(r);
  }

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<ucp_ep_h> endpoints_;  // indexed by rank
};

}  // namespace

Status ucx_transport_create(Exchange &exchange, std::unique_ptr<Transport> *out) {
  auto transport = std::make_unique<UcxTransport>(exchange.rank(), exchange.size());
  BAGUA_TRY(transport->init(exchange));
  *out = std::move(transport);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
