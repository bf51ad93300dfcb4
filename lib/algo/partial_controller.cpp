#include "partial_controller.hpp"

#include <algorithm>
#include <utility>

namespace bagua::partial_wire {

void encode_assignment(const PlannedGroup &g, int ranks, std::vector<int64_t> *out) {
  out->assign(assignment_words(ranks), -1);
  (*out)[0] = g.id;
  (*out)[1] = static_cast<int64_t>(g.members.size());
  (*out)[2] = g.bridging ? 1 : 0;
  for (size_t i = 0; i < g.members.size(); ++i) {
    (*out)[3 + i] = g.members[i];
    (*out)[3 + static_cast<size_t>(ranks) + i] = g.iterations[i];
  }
}

Status decode_assignment(std::span<const int64_t> words, int ranks, int self, PlannedGroup *out) {
  const int64_t size = words[1];
  if (words.size() != assignment_words(ranks) || words[0] < 0 || size < 1 || size > ranks)
    return fail(BAGUA_ERR_CORRUPT_DATA, "partial reduce: malformed group assignment");
  const auto members = words.subspan(3, static_cast<size_t>(size));
  const auto iterations = words.subspan(3 + static_cast<size_t>(ranks), static_cast<size_t>(size));
  const bool sorted = std::is_sorted(members.begin(), members.end()) &&
                      std::adjacent_find(members.begin(), members.end()) == members.end();
  if (!sorted || members.front() < 0 || members.back() >= ranks ||
      std::find(members.begin(), members.end(), self) == members.end())
    return fail(BAGUA_ERR_CORRUPT_DATA, "partial reduce: group %lld has invalid members",
                static_cast<long long>(words[0]));
  out->id = words[0];
  out->bridging = words[2] != 0;
  out->members.assign(members.begin(), members.end());
  out->iterations.assign(iterations.begin(), iterations.end());
  return BAGUA_SUCCESS;
}

}  // namespace bagua::partial_wire

namespace bagua {

PartialController::PartialController(Transport &t, const PartialPolicy &policy)
    : t_(t),
      planner_(t.size(), policy),
      inbox_words_(static_cast<size_t>(t.size())),
      inbox_(static_cast<size_t>(t.size())) {}

PartialController::~PartialController() { end(); }

Status PartialController::begin() {
  for (int r = 0; r < t_.size(); ++r) BAGUA_TRY(post_inbox(r));
  return BAGUA_SUCCESS;
}

Status PartialController::step(bool *progressed) {
  *progressed = false;
  const Status s = poll_and_close(progressed);
  quiescent_ = s == BAGUA_SUCCESS && planner_.all_left() && outbox_.empty();
  return s;
}

// Ranks that left may come back: the inbox stays posted for every rank.
Status PartialController::poll_and_close(bool *progressed) {
  BAGUA_TRY(poll_inbox(progressed));
  PlannedGroup group;
  while (planner_.try_close(GroupPlanner::Clock::now(), &group)) {
    BAGUA_TRY(send_group(group));
    *progressed = true;
  }
  return poll_outbox(progressed);
}

void PartialController::end() {
  if (std::exchange(ended_, true)) return;
  if (quiescent_)
    for (Request &req : inbox_) t_.cancel_unmatched(&req);
  abandon_all(t_, inbox_);
  for (Outgoing &o : outbox_) abandon_all(t_, o.sends);
  outbox_.clear();
}

Status PartialController::post_inbox(int rank) {
  auto &words = inbox_words_[static_cast<size_t>(rank)];
  return t_.irecv(words.data(), sizeof(words), rank, partial_wire::to_controller(),
                  &inbox_[static_cast<size_t>(rank)]);
}

Status PartialController::poll_inbox(bool *progressed) {
  for (int r = 0; r < t_.size(); ++r) {
    Request &req = inbox_[static_cast<size_t>(r)];
    bool done = false;
    if (!req.active) continue;
    BAGUA_TRY(t_.test(&req, &done));
    if (!done) continue;
    *progressed = true;
    const auto &[kind, group_size, iteration] = inbox_words_[static_cast<size_t>(r)];
    const auto now = GroupPlanner::Clock::now();
    if (kind == partial_wire::kLeave)
      planner_.leave(r, now);
    else if (kind == partial_wire::kReady)
      planner_.arrive(r, static_cast<int>(group_size), iteration, now);
    else
      return fail(BAGUA_ERR_CORRUPT_DATA, "partial controller: bad message from rank %d", r);
    BAGUA_TRY(post_inbox(r));  // a rank that left may come back
  }
  return BAGUA_SUCCESS;
}

Status PartialController::send_group(const PlannedGroup &g) {
  Outgoing &o = outbox_.emplace_back();
  partial_wire::encode_assignment(g, t_.size(), &o.words);
  o.sends.resize(g.members.size());
  for (size_t i = 0; i < g.members.size(); ++i)
    BAGUA_TRY(t_.isend(o.words.data(), o.words.size() * sizeof(int64_t), g.members[i],
                       partial_wire::to_member(), &o.sends[i]));
  return BAGUA_SUCCESS;
}

Status PartialController::poll_outbox(bool *progressed) {
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    bool all_done = true;
    for (Request &req : it->sends) {
      bool done = !req.active;
      if (!done) BAGUA_TRY(t_.test(&req, &done));
      all_done = all_done && done;
    }
    if (!all_done) {
      ++it;
      continue;
    }
    it = outbox_.erase(it);
    *progressed = true;
  }
  return BAGUA_SUCCESS;
}

}  // namespace bagua
