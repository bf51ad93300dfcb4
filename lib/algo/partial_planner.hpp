// The partial-reduce controller's decisions, free of any transport: which
// ready ranks form the next group, when, and with which sequence id. Groups
// form in arrival order and close at P members or at an adaptive deadline
// after their first arrival; a union-find of who has averaged with whom
// forces a bridging group whenever a window of tau groups passes without the
// averaging graph becoming connected (waiting at most the longest deadline for ranks
// that may have stopped calling).
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace bagua {

struct PartialPolicy {
  int min_group_size;
  double deadline_ms, deadline_min_ms, deadline_max_ms;
  int tau;  // 0: automatic (GroupPlanner::window_groups)
};

struct PlannedGroup {
  int64_t id = 0;
  bool bridging = false;
  std::vector<int> members;         // ascending ranks
  std::vector<int64_t> iterations;  // aligned with members
};

// Disjoint sets of ranks.
class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(static_cast<size_t>(n)) { reset(); }
  void reset();
  int find(int x);
  void unite(int a, int b);

 private:
  std::vector<int> parent_;
};

class GroupPlanner {
 public:
  using Clock = std::chrono::steady_clock;

  GroupPlanner(int ranks, const PartialPolicy &policy);

  // Rank `rank` is ready at `iteration` and asks for groups of `group_size`
  // (a rank that had left takes part again).
  void arrive(int rank, int group_size, int64_t iteration, Clock::time_point now);
  // Rank `rank` makes no more calls until it arrives again: it is not waited for.
  void leave(int rank, Clock::time_point now);
  // Closes the next group if its condition holds now.
  bool try_close(Clock::time_point now, PlannedGroup *out);

  bool all_left() const { return active_count_ == 0; }
  double deadline_ms() const { return deadline_ms_; }

 private:
  struct Ready {
    int rank;
    int group_size;
    int64_t iteration;
  };

  static constexpr int kAutoTauMin = 16;

  int target_size() const;
  int window_groups() const;
  bool connected();
  bool needs_bridge();
  bool select_normal(Clock::time_point now, std::vector<size_t> *picked);
  bool select_bridging(Clock::time_point now, std::vector<size_t> *picked);
  void adapt_deadline(int size, int target);
  void emit(const std::vector<size_t> &picked, bool bridging, Clock::time_point now,
            PlannedGroup *out);
  void note_connectivity();

  const int n_;
  const PartialPolicy policy_;
  std::vector<bool> active_;
  int active_count_;
  std::vector<Ready> waiting_;  // arrival order
  Clock::time_point head_since_{};
  double deadline_ms_;
  UnionFind components_;
  int groups_in_window_ = 0;
  int64_t next_id_ = 0;
};

}  // namespace bagua
