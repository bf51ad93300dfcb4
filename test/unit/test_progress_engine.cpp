// The progress engine's sleeping tasks: a sleeper is not polled until its
// time, the other tasks run meanwhile, and wake_sleepers ends a sleep early;
// and its task groups: each owner of an engine it shares waits for its own
// tasks alone; and Open MPI's waits yield the core while tasks run.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "base/fiber.hpp"
#include "core/progress_engine.hpp"
#include "transport/mpi_waits_yield.hpp"

namespace {

using bagua::ProgressEngine;
using bagua::TaskGroup;
using Clock = ProgressEngine::Clock;

void start(ProgressEngine &engine, TaskGroup &group, std::function<void()> body) {
  ProgressEngine::Task task;
  REQUIRE(engine.prepare(std::move(body), group, &task) == BAGUA_SUCCESS);
  engine.start(std::move(task));
}

// A task of a group of its own (the engine outlives it: the tests wait for
// their flags).
void start(ProgressEngine &engine, std::function<void()> body) {
  static TaskGroup ungrouped;
  start(engine, ungrouped, std::move(body));
}

void wait_for(const std::atomic<bool> &flag) {
  while (!flag.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Open MPI's yield_when_idle flag (read by opal_progress), or NULL under
// another MPI.
bool *open_mpi_yield_flag() {
  return static_cast<bool *>(dlsym(RTLD_DEFAULT, "opal_progress_yield_when_idle"));
}

bool read_flag(bool *flag) { return std::atomic_ref<bool>(*flag).load(); }

void wait_for_flag(bool *flag, bool value) {
  while (read_flag(flag) != value) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

TEST_CASE("a sleeping task wakes no earlier than its time", "[engine]") {
  ProgressEngine engine;
  std::atomic<bool> slept{false};
  const auto until = Clock::now() + std::chrono::milliseconds(20);
  Clock::time_point woke;
  start(engine, [&] {
    ProgressEngine::sleep_until(until);
    woke = Clock::now();
    slept = true;
  });
  wait_for(slept);
  CHECK(woke >= until);
}

TEST_CASE("the other tasks run while one sleeps", "[engine]") {
  ProgressEngine engine;
  std::atomic<bool> sleeping{false}, other_done{false}, woke{false};
  start(engine, [&] {
    sleeping = true;
    ProgressEngine::sleep_until(Clock::now() + std::chrono::hours(1));
    woke = true;
  });
  wait_for(sleeping);
  start(engine, [&] { other_done = true; });
  wait_for(other_done);  // hangs (the test's timeout) if the sleeper held the thread
  CHECK_FALSE(woke.load());
  engine.wake_sleepers();
  wait_for(woke);
}

TEST_CASE("wake_sleepers ends a sleep early", "[engine]") {
  ProgressEngine engine;
  std::atomic<bool> sleeping{false}, woke{false};
  const auto until = Clock::now() + std::chrono::hours(1);
  start(engine, [&] {
    sleeping = true;
    ProgressEngine::sleep_until(until);
    woke = true;
  });
  wait_for(sleeping);
  engine.wake_sleepers();
  wait_for(woke);
  CHECK(Clock::now() < until);
}

TEST_CASE("outside a task sleep_until sleeps the calling thread", "[engine]") {
  const auto until = Clock::now() + std::chrono::milliseconds(20);
  ProgressEngine::sleep_until(until);
  CHECK(Clock::now() >= until);
}

TEST_CASE("a task group waits for its own tasks, not the engine's others", "[engine]") {
  ProgressEngine engine;
  std::atomic<bool> release{false}, other_done{false};
  TaskGroup blocked, short_lived;
  // A task of another owner that runs until released.
  start(engine, blocked, [&] {
    while (!release) ProgressEngine::sleep_until(Clock::now() + std::chrono::milliseconds(1));
  });
  start(engine, short_lived, [&] { other_done = true; });
  short_lived.wait();  // returns although the first group's task still runs
  CHECK(other_done);
  CHECK_FALSE(release);
  release = true;
  blocked.wait();
}

TEST_CASE("a task prepared and dropped unstarted leaves its group", "[engine]") {
  ProgressEngine engine;
  TaskGroup group;
  bool ran = false;
  {
    ProgressEngine::Task task;
    REQUIRE(engine.prepare([&] { ran = true; }, group, &task) == BAGUA_SUCCESS);
  }
  group.wait();
  CHECK_FALSE(ran);
}

TEST_CASE("holders of MpiWaitsYield turn Open MPI's yielding on until the last lets go",
          "[engine]") {
  bool *flag = open_mpi_yield_flag();
  if (flag == nullptr) return;  // another MPI: nothing to turn on
  const bool before = read_flag(flag);
  {
    bagua::MpiWaitsYield first, second;
    first.hold(true);
    CHECK(read_flag(flag));
    second.hold(true);
    first.hold(false);
    CHECK(read_flag(flag));
    first.hold(false);  // a second let-go changes nothing
    CHECK(read_flag(flag));
  }
  CHECK(read_flag(flag) == before);
}

TEST_CASE("MPI waits yield while an engine's task runs, and spin again after it", "[engine]") {
  bool *flag = open_mpi_yield_flag();
  if (flag == nullptr) return;
  const bool before = read_flag(flag);
  REQUIRE_FALSE(before);  // Open MPI's default (mpi_yield_when_idle unset)
  ProgressEngine engine;
  TaskGroup group;
  std::atomic<bool> release{false};
  start(engine, group, [&] {
    while (!release.load()) bagua::fiber_yield();
  });
  wait_for_flag(flag, true);
  release = true;
  group.wait();
  wait_for_flag(flag, false);
}
