#include "partial_planner.hpp"

#include <algorithm>
#include <numeric>

namespace bagua {

void UnionFind::reset() { std::iota(parent_.begin(), parent_.end(), 0); }

int UnionFind::find(int x) {
  // Path halving: every visited node skips to its grandparent.
  while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
  return x;
}

void UnionFind::unite(int a, int b) { parent_[find(a)] = find(b); }

GroupPlanner::GroupPlanner(int ranks, const PartialPolicy &policy)
    : n_(ranks),
      policy_(policy),
      active_(static_cast<size_t>(ranks), true),
      active_count_(ranks),
      deadline_ms_(policy.deadline_ms),
      components_(ranks) {}

void GroupPlanner::arrive(int rank, int group_size, int64_t iteration, Clock::time_point now) {
  if (!active_[rank]) {  // it had left: it takes part again
    active_[rank] = true;
    ++active_count_;
  }
  if (waiting_.empty()) head_since_ = now;
  waiting_.push_back({rank, group_size, iteration});
}

void GroupPlanner::leave(int rank, Clock::time_point now) {
  if (!active_[rank]) return;
  active_[rank] = false;
  --active_count_;
  std::erase_if(waiting_, [&](const Ready &r) { return r.rank == rank; });
  if (waiting_.empty()) head_since_ = now;
  note_connectivity();
}

bool GroupPlanner::try_close(Clock::time_point now, PlannedGroup *out) {
  if (waiting_.empty()) return false;
  std::vector<size_t> picked;
  const bool bridging = needs_bridge();
  if (!(bridging ? select_bridging(now, &picked) : select_normal(now, &picked))) return false;
  emit(picked, bridging, now, out);
  return true;
}

// P of the group now forming (its first arrival's request), capped at the
// ranks still taking part.
int GroupPlanner::target_size() const {
  return std::max(1, std::min(waiting_.front().group_size, active_count_));
}

bool GroupPlanner::connected() {
  int root = -1;
  for (int r = 0; r < n_; ++r) {
    if (!active_[r]) continue;
    if (root == -1)
      root = components_.find(r);
    else if (components_.find(r) != root)
      return false;
  }
  return true;
}

// The connectivity window in groups: tau, or where tau is 0 (automatic),
// four times the fewest groups of P that can connect the active ranks, and
// at least 16. A window below that fewest number ends every time in a
// bridging group, which waits for a rank of every component.
int GroupPlanner::window_groups() const {
  if (policy_.tau > 0) return policy_.tau;
  const int p = target_size();
  if (p <= 1) return kAutoTauMin;
  return std::max(kAutoTauMin, 4 * ((active_count_ - 1 + p - 2) / (p - 1)));
}

bool GroupPlanner::needs_bridge() {
  return groups_in_window_ >= window_groups() - 1 && !connected();
}

bool GroupPlanner::select_normal(Clock::time_point now, std::vector<size_t> *picked) {
  const int target = target_size();
  const auto waited = std::chrono::duration<double, std::milli>(now - head_since_).count();
  const bool full = static_cast<int>(waiting_.size()) >= target;
  if (!full && waited < deadline_ms_) return false;
  const size_t size = full ? static_cast<size_t>(target) : waiting_.size();
  for (size_t i = 0; i < size; ++i) picked->push_back(i);
  adapt_deadline(static_cast<int>(size), target);
  return true;
}

// A bridging group takes, in arrival order, one rank of every component of
// the active ranks, plus other ready ranks while that still leaves room
// (up to P) for the components not yet covered. It closes once every
// component is covered, or, when ranks of some component never come (they
// stopped calling without leaving, e.g. at the end of a fixed-step loop),
// at the longest deadline after its first arrival with the ranks it has.
bool GroupPlanner::select_bridging(Clock::time_point now, std::vector<size_t> *picked) {
  std::vector<bool> is_root(static_cast<size_t>(n_), false), covered(static_cast<size_t>(n_));
  int uncovered = 0;
  for (int r = 0; r < n_; ++r) {
    if (!active_[r] || is_root[components_.find(r)]) continue;
    is_root[components_.find(r)] = true;
    ++uncovered;
  }
  const int target = target_size();
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const int root = components_.find(waiting_[i].rank);
    const bool fills_gap = !covered[root];
    if (!fills_gap && static_cast<int>(picked->size()) + uncovered >= target) continue;
    if (fills_gap) {
      covered[root] = true;
      --uncovered;
    }
    picked->push_back(i);
  }
  if (uncovered == 0) return true;
  const auto waited = std::chrono::duration<double, std::milli>(now - head_since_).count();
  return !picked->empty() && waited >= policy_.deadline_max_ms;
}

void GroupPlanner::adapt_deadline(int size, int target) {
  const bool too_small = size < std::min(policy_.min_group_size, target);
  deadline_ms_ = too_small ? std::min(deadline_ms_ * 2, policy_.deadline_max_ms)
                           : std::max(deadline_ms_ * 0.9, policy_.deadline_min_ms);
}

void GroupPlanner::emit(const std::vector<size_t> &picked, bool bridging, Clock::time_point now,
                        PlannedGroup *out) {
  std::vector<Ready> members;
  for (size_t i : picked) members.push_back(waiting_[i]);
  // Remove the picked entries, keeping the others in arrival order.
  for (auto it = picked.rbegin(); it != picked.rend(); ++it)
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(*it));
  std::sort(members.begin(), members.end(),
            [](const Ready &a, const Ready &b) { return a.rank < b.rank; });
  out->id = next_id_++;
  out->bridging = bridging;
  out->members.clear();
  out->iterations.clear();
  for (const Ready &m : members) {
    out->members.push_back(m.rank);
    out->iterations.push_back(m.iteration);
    components_.unite(m.rank, members.front().rank);
  }
  ++groups_in_window_;
  note_connectivity();
  head_since_ = now;
}

// Once every active rank is in one component, a new window of tau groups starts.
void GroupPlanner::note_connectivity() {
  if (!connected()) return;
  components_.reset();
  groups_in_window_ = 0;
}

}  // namespace bagua
