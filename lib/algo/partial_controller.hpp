// The partial-reduce control plane: the wire format between ranks and the
// controller, and the controller itself: an event loop on one rank, with one
// pre-posted fixed-size receive per rank as its inbox (no any-source receive
// and no thread per waiting rank). The loop's steps never block; the core
// runs them as a task of a progress engine (core/partial_state.cpp).
#pragma once

#include <array>
#include <atomic>
#include <list>
#include <span>
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
  // calls use it from another thread, so the transport must be thread-safe).
  PartialController(Transport &t, const PartialPolicy &policy);
  // Abandons whatever is still posted (end() cancels the inbox first when
  // every rank has left).
  ~PartialController();
  PartialController(const PartialController &) = delete;
  PartialController &operator=(const PartialController &) = delete;

  // Posts the inbox: one receive per rank.
  Status begin();
  // One pass of the event loop: takes arrivals and leaves from the inbox,
  // closes every group whose condition holds and drives the assignment
  // sends. *progressed: whether anything happened (else the caller may
  // sleep before the next step). A failed step ends the serving; waiting
  // ranks then time out.
  Status step(bool *progressed);
  // Every rank has left and nothing is left to send, at the last step; any
  // thread may ask. forget_quiescence() makes an earlier such moment not count.
  bool quiescent() const { return quiescent_; }
  void forget_quiescence() { quiescent_ = false; }
  // After the last step (or at destruction): once every rank has left (the
  // communicator is being freed) no message comes for the inbox, and
  // cancelling it leaves the control communicator freeable; everything else
  // posted is abandoned. Later calls do nothing.
  void end();

 private:
  struct Outgoing {
    std::vector<int64_t> words;
    std::vector<Request> sends;
  };

  Status poll_and_close(bool *progressed);
  Status post_inbox(int rank);
  Status poll_inbox(bool *progressed);
  Status send_group(const PlannedGroup &g);
  Status poll_outbox(bool *progressed);

  Transport &t_;
  GroupPlanner planner_;
  std::vector<partial_wire::RequestWords> inbox_words_;
  std::vector<Request> inbox_;
  std::list<Outgoing> outbox_;
  std::atomic<bool> quiescent_{false};
  bool ended_ = false;
};

}  // namespace bagua
