// The partial-reduce control plane: the wire format between ranks and the
// controller, and the controller itself: one thread on one rank, event
// driven, with one pre-posted fixed-size receive per rank as its inbox (no
// any-source receive and no thread per waiting rank).
#pragma once

#include <array>
#include <atomic>
#include <list>
#include <span>
#include <thread>
#include <vector>

#include "../transport/transport.hpp"
#include "partial_planner.hpp"

namespace bagua::partial_wire {

// Rank -> controller: {kind, group_size, iteration}.
enum Kind : int64_t { kReady = 1, kLeave = 2 };
using RequestWords = std::array<int64_t, 3>;
// Controller -> member: {id, size, bridging, members[n], iterations[n]}.
inline size_t assignment_words(int ranks) { return 3 + 2 * static_cast<size_t>(ranks); }

// The control plane has a communicator of its own, so two tags suffice.
inline Tag to_controller() { return 0; }
inline Tag to_member() { return 1; }

void encode_assignment(const PlannedGroup &g, int ranks, std::vector<int64_t> *out);
// Checks the words (size, sorted in-range members, `self` among them).
Status decode_assignment(std::span<const int64_t> words, int ranks, int self, PlannedGroup *out);

}  // namespace bagua::partial_wire

namespace bagua {

class PartialController {
 public:
  // Serves the ranks of `t` (which outlives the controller; the rank's own
  // client thread uses it too, so the transport must be thread-safe).
  PartialController(Transport &t, const PartialPolicy &policy);
  ~PartialController();
  PartialController(const PartialController &) = delete;
  PartialController &operator=(const PartialController &) = delete;

  // Returns once every rank has left (and every assignment was sent), or at
  // the deadline; the thread is gone.
  void finish(const Deadline &deadline);

 private:
  struct Outgoing {
    std::vector<int64_t> words;
    std::vector<Request> sends;
  };

  void run();
  Status serve();
  Status post_inbox(int rank);
  Status poll_inbox(bool *progressed);
  Status send_group(const PlannedGroup &g);
  Status poll_outbox(bool *progressed);

  Transport &t_;
  GroupPlanner planner_;
  std::vector<partial_wire::RequestWords> inbox_words_;
  std::vector<Request> inbox_;
  std::list<Outgoing> outbox_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> quiescent_{false};  // every rank has left, nothing to send
  std::atomic<bool> done_{false};       // the event loop ended
  std::thread thread_;
};

}  // namespace bagua
