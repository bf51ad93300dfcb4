// The partial-reduce group planner on synthetic time points: groups close at
// P or at the deadline, the deadline adapts within its bounds, tau forces a
// bridging group, ranks leave and come back. No sleeps, no transport.
#include <catch2/catch.hpp>
#include <chrono>

#include "algo/partial_planner.hpp"

using bagua::GroupPlanner;
using bagua::PlannedGroup;

namespace {

// The calls into lib/algo (adapt here when the interfaces are renamed).
struct Policy {
  int min_group_size = 2;
  double deadline_ms = 10, deadline_min_ms = 1, deadline_max_ms = 1000;
  int tau = 16;
};
GroupPlanner make_planner(int ranks, const Policy &p) {
  return GroupPlanner(
      ranks, {p.min_group_size, p.deadline_ms, p.deadline_min_ms, p.deadline_max_ms, p.tau});
}

// `ms` milliseconds after an arbitrary origin.
GroupPlanner::Clock::time_point at(double ms) {
  const std::chrono::duration<double, std::milli> d(ms);
  return GroupPlanner::Clock::time_point{} +
         std::chrono::duration_cast<GroupPlanner::Clock::duration>(d);
}

// Arrivals at one time point, each rank at iteration 10 * rank.
void arrive(GroupPlanner &p, std::initializer_list<int> ranks, int group_size, double ms) {
  for (int r : ranks) p.arrive(r, group_size, 10 * r, at(ms));
}

// The members of the group closing at `ms`, or {} when none closes.
std::vector<int> close(GroupPlanner &p, double ms, PlannedGroup *g = nullptr) {
  PlannedGroup local;
  PlannedGroup &out = g ? *g : local;
  if (!p.try_close(at(ms), &out)) return {};
  return out.members;
}

using Members = std::vector<int>;

}  // namespace

TEST_CASE("planner: a group closes when P ranks are ready", "[planner]") {
  GroupPlanner p = make_planner(4, {});
  arrive(p, {2}, 2, 0);
  CHECK(close(p, 1) == Members{});
  arrive(p, {0}, 2, 1);
  PlannedGroup g;
  CHECK(close(p, 1, &g) == Members{0, 2});  // sorted, not in arrival order
  CHECK(g.id == 0);
  CHECK(!g.bridging);
  CHECK(g.iterations == std::vector<int64_t>{0, 20});
  CHECK(close(p, 2) == Members{});  // nobody is waiting
  // Arrival order decides: 3 and 1 form the next group, 0 waits.
  arrive(p, {3, 1, 0}, 2, 5);
  CHECK(close(p, 5, &g) == Members{1, 3});
  CHECK(g.id == 1);
}

TEST_CASE("planner: at the deadline a group closes with fewer ranks", "[planner]") {
  GroupPlanner p = make_planner(4, {});
  arrive(p, {1}, 3, 100);
  arrive(p, {3}, 3, 104);
  CHECK(close(p, 109.9) == Members{});
  CHECK(close(p, 110) == Members{1, 3});  // 10 ms after the first arrival
}

TEST_CASE("planner: the next group's deadline counts from the previous close", "[planner]") {
  GroupPlanner p = make_planner(4, {.deadline_ms = 10, .tau = 100});
  arrive(p, {0, 1}, 2, 0);
  arrive(p, {2}, 2, 1);
  CHECK(close(p, 5) == Members{0, 1});  // full: the deadline becomes 9
  CHECK(p.deadline_ms() == Approx(9));
  CHECK(close(p, 13.9) == Members{});  // 2 has waited 12.9 ms, its group 8.9
  CHECK(close(p, 14) == Members{2});
}

TEST_CASE("planner: the deadline doubles below the minimum size, else shrinks by 0.9",
          "[planner]") {
  // tau large: these ranks never connect, and no bridging group interferes.
  GroupPlanner p = make_planner(8, {.min_group_size = 3,
                                    .deadline_ms = 300,
                                    .deadline_min_ms = 50,
                                    .deadline_max_ms = 1000,
                                    .tau = 1000});
  double now = 0;
  // One rank per group, at the deadline: below the minimum size.
  auto lone_group = [&] {
    arrive(p, {0}, 4, now);
    now += p.deadline_ms();
    return close(p, now).size();
  };
  CHECK(lone_group() == 1);
  CHECK(p.deadline_ms() == Approx(600));
  CHECK(lone_group() == 1);
  CHECK(p.deadline_ms() == Approx(1000));  // 1200, capped
  CHECK(lone_group() == 1);
  CHECK(p.deadline_ms() == Approx(1000));
  // Three of P = 4 at the deadline: not below the minimum, shrinks.
  arrive(p, {5, 6, 7}, 4, now);
  now += p.deadline_ms();
  CHECK(close(p, now) == Members{5, 6, 7});
  CHECK(p.deadline_ms() == Approx(900));
  // Full groups keep shrinking it, down to the lower bound.
  double want = 900;
  for (int i = 0; i < 40; ++i) {
    arrive(p, {0, 1, 2, 3}, 4, now);
    REQUIRE(close(p, now) == Members{0, 1, 2, 3});
    want = std::max(want * 0.9, 50.0);
    CHECK(p.deadline_ms() == Approx(want));
  }
  CHECK(p.deadline_ms() == Approx(50));
}

TEST_CASE("planner: the minimum size is capped by P", "[planner]") {
  // P = 2 below the minimum size 3: full groups of 2 are not too small.
  GroupPlanner p = make_planner(4, {.min_group_size = 3, .deadline_ms = 10});
  arrive(p, {0, 1}, 2, 0);
  CHECK(close(p, 0) == Members{0, 1});
  CHECK(p.deadline_ms() == Approx(9));
}

// n = 5, P = 2, tau = 3: groups {0,1} and {2,3} close at 0 and 1 ms, so the
// graph {0,1} {2,3} {4} is not connected and the third group is bridging;
// ranks 1, 0 and 3 are ready for it at 2 ms.
GroupPlanner bridge_pending() {
  GroupPlanner p = make_planner(5, {.tau = 3});
  arrive(p, {0, 1}, 2, 0);
  CHECK(close(p, 0) == Members{0, 1});
  arrive(p, {2, 3}, 2, 1);
  CHECK(close(p, 1) == Members{2, 3});
  arrive(p, {1, 0, 3}, 2, 2);
  return p;
}

TEST_CASE("planner: tau forces a bridging group across the components", "[planner]") {
  GroupPlanner p = bridge_pending();
  // Bridging: waits (up to the longest deadline) until every component has a
  // ready rank.
  CHECK(close(p, 500) == Members{});
  arrive(p, {4}, 2, 3);
  PlannedGroup g;
  // One rank per component in arrival order (1, 3, 4), more than P.
  CHECK(close(p, 3, &g) == Members{1, 3, 4});
  CHECK(g.bridging);
  CHECK(g.id == 2);
  // Connected: a new window, normal groups again (0 is still waiting).
  arrive(p, {2}, 2, 4);
  CHECK(close(p, 4, &g) == Members{0, 2});
  CHECK(!g.bridging);
}

TEST_CASE("planner: a bridging group whose component never comes closes at the longest deadline",
          "[planner]") {
  // As above, but rank 4 has stopped calling without leaving (the end of a
  // fixed-step loop): the bridge closes 1000 ms (deadline_max) after its
  // first arrival with the ranks it picked, so no rank waits forever.
  GroupPlanner p = bridge_pending();
  CHECK(close(p, 2 + 999) == Members{});
  PlannedGroup g;
  CHECK(close(p, 2 + 1000, &g) == Members{1, 3});
  CHECK(g.bridging);
  // Rank 0 is still waiting; the next bridge is bounded the same way.
  CHECK(close(p, 1002 + 999) == Members{});
  CHECK(close(p, 1002 + 1000, &g) == Members{0});
}

TEST_CASE("planner: a bridging group fills up to P with other ready ranks", "[planner]") {
  // n = 4, tau = 2: after {0, 1} the components are {0,1} {2} {3}, and the
  // next group bridges them. In arrival order 0, 1, 2, 3: 0 covers {0,1};
  // 1 joins only if room for {2} and {3} remains within P.
  for (int group_size : {3, 4}) {
    GroupPlanner p = make_planner(4, {.tau = 2});
    arrive(p, {0, 1}, 2, 0);
    CHECK(close(p, 0) == Members{0, 1});
    arrive(p, {0, 1, 2, 3}, group_size, 1);
    PlannedGroup g;
    INFO("P = " << group_size);
    CHECK(close(p, 1, &g) == (group_size == 3 ? Members{0, 2, 3} : Members{0, 1, 2, 3}));
    CHECK(g.bridging);
  }
}

TEST_CASE("planner: groups that connect the ranks within tau need no bridge", "[planner]") {
  GroupPlanner p = make_planner(4, {.tau = 3});
  PlannedGroup g;
  arrive(p, {0, 1}, 2, 0);
  CHECK(close(p, 0, &g) == Members{0, 1});
  arrive(p, {1, 2}, 2, 1);
  CHECK(close(p, 1, &g) == Members{1, 2});
  // Third group of the window: still not connected (3 alone) -> bridging.
  arrive(p, {3, 0}, 2, 2);
  CHECK(close(p, 2, &g) == Members{0, 3});
  CHECK(g.bridging);
  // A fresh window: two ordinary groups again.
  arrive(p, {2, 3}, 2, 3);
  CHECK(close(p, 3, &g) == Members{2, 3});
  CHECK(!g.bridging);
}

TEST_CASE("planner: leaving ranks are not waited for and may come back", "[planner]") {
  GroupPlanner p = make_planner(3, {});
  arrive(p, {0, 1}, 3, 0);
  CHECK(close(p, 0) == Members{});
  p.leave(2, at(1));  // P_eff becomes 2: the group is full
  CHECK(close(p, 1) == Members{0, 1});
  // A waiting rank that leaves is dropped from the ready list.
  arrive(p, {0}, 3, 2);
  p.leave(0, at(3));
  CHECK(close(p, 1e6) == Members{});
  // 2 and 0 arrive again: three active ranks, P_eff = 3.
  arrive(p, {2, 0}, 3, 4);
  CHECK(close(p, 4) == Members{});
  arrive(p, {1}, 3, 5);
  CHECK(close(p, 5) == Members{0, 1, 2});
  CHECK(!p.all_left());
  for (int r : {0, 1, 2}) p.leave(r, at(6));
  CHECK(p.all_left());
  p.leave(1, at(7));  // leaving twice is harmless
  CHECK(p.all_left());
}

TEST_CASE("planner: connectivity counts only the active ranks", "[planner]") {
  // With 3 left, {0, 1, 2} connects the active ranks (counting 3, the
  // window would go on and {0, 1} would have to bridge).
  GroupPlanner p = make_planner(4, {.tau = 2});
  p.leave(3, at(0));
  PlannedGroup g;
  arrive(p, {0, 1, 2}, 3, 0);
  CHECK(close(p, 0, &g) == Members{0, 1, 2});
  CHECK(!g.bridging);
  arrive(p, {0, 1}, 2, 1);
  CHECK(close(p, 1, &g) == Members{0, 1});
  CHECK(!g.bridging);
  arrive(p, {1, 2}, 2, 2);
  CHECK(close(p, 2, &g) == Members{1, 2});
  CHECK(g.bridging);  // the window {0,1} left 2 alone
}
