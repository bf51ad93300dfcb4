#include "../base/fiber.hpp"
#include "transport.hpp"

namespace bagua {
namespace {

// Spinning is cheapest while a message is in flight, but ranks often share
// cores (oversubscribed runs), so after a short spin each poll yields. On a
// progress engine's fiber every poll yields: the other tasks poll meanwhile.
constexpr int kSpinPolls = 64;

Status timeout_error(const Request &req, const char *transport) {
  return fail(BAGUA_ERR_TIMEOUT, "%s of %zu bytes %s rank %d (tag 0x%x) timed out on %s",
              req.is_recv ? "receive" : "send", req.bytes, req.is_recv ? "from" : "to", req.peer,
              req.tag, transport);
}

}  // namespace

Status wait(Transport &t, Request &req, const Deadline &deadline) {
  for (int polls = 0; req.active; ++polls) {
    bool done = false;
    const Status s = t.test(&req, &done);
    if (s != BAGUA_SUCCESS) return s;
    if (done) break;
    if (polls >= kSpinPolls) {
      if (deadline.expired()) {
        const Status err = timeout_error(req, t.name());
        t.abandon(&req);
        return err;
      }
      poll_pause();
    } else if (in_fiber()) {
      fiber_yield();
    }
  }
  return BAGUA_SUCCESS;
}

void abandon_all(Transport &t, std::span<Request> reqs) {
  for (Request &r : reqs)
    if (r.active) t.abandon(&r);
}

Status wait_all(Transport &t, std::span<Request> reqs, const Deadline &deadline) {
  for (Request &r : reqs) {
    const Status s = wait(t, r, deadline);
    if (s != BAGUA_SUCCESS) {
      abandon_all(t, reqs);
      return s;
    }
  }
  return BAGUA_SUCCESS;
}

}  // namespace bagua
