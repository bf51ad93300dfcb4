// The bucket-size tuner's state machine on injected step times: which cap is
// in effect at every step, and the decision from the agreed times.
#include <catch2/catch.hpp>
#include <vector>

#include "core/bucket_tuner.hpp"

using bagua::BucketSizeTuner;

namespace {

// Runs the tuner over `times` (one per step); returns the cap in effect
// before each step and the step after which it changed.
std::vector<size_t> caps_per_step(BucketSizeTuner &t, const std::vector<double> &times,
                                  const BucketSizeTuner::Agree &agree) {
  std::vector<size_t> caps;
  for (double s : times) {
    caps.push_back(t.current());
    t.on_step(s, agree);
  }
  caps.push_back(t.current());
  return caps;
}

const BucketSizeTuner::Agree kLocal = [](std::vector<double> &) {};

}  // namespace

TEST_CASE("tuner: each cap runs warm-up then timed steps; the fastest mean wins", "[tuner]") {
  BucketSizeTuner t({1, 2, 4}, 1, 2);
  // Warm-up steps (first of each trial) are slow and ignored.
  const std::vector<double> times = {9, 3, 3, 9, 1, 2, 9, 2, 2};
  const std::vector<size_t> caps = caps_per_step(t, times, kLocal);
  CHECK(caps == std::vector<size_t>{1, 1, 1, 2, 2, 2, 4, 4, 4, 2});
  CHECK_FALSE(t.tuning());
  // Later steps change nothing.
  CHECK_FALSE(t.on_step(0.001, kLocal));
  CHECK(t.current() == 2);
}

TEST_CASE("tuner: the decision uses the agreed (slowest rank's) means", "[tuner]") {
  BucketSizeTuner t({1, 2}, 0, 1);
  std::vector<double> seen;
  // This rank saw cap 1 faster; the slowest rank saw cap 2 faster.
  const BucketSizeTuner::Agree slowest = [&](std::vector<double> &means) {
    seen = means;
    means = {5, 4};
  };
  CHECK(t.on_step(1, slowest));        // trial of cap 1 over: switch to 2
  CHECK_FALSE(t.on_step(3, slowest));  // decision: cap 2 stays
  CHECK(seen == std::vector<double>{1, 3});
  CHECK(t.current() == 2);
}

TEST_CASE("tuner: switching back to an earlier cap reports a change; ties keep the first",
          "[tuner]") {
  BucketSizeTuner t({1, 2, 4}, 0, 1);
  CHECK(t.on_step(2, kLocal));
  CHECK(t.on_step(2, kLocal));
  CHECK(t.on_step(3, kLocal));  // back to cap 1 (first of the tie)
  CHECK(t.current() == 1);
}

TEST_CASE("tuner: one candidate does not tune", "[tuner]") {
  BucketSizeTuner t({8}, 1, 2);
  CHECK_FALSE(t.tuning());
  CHECK_FALSE(t.on_step(1, kLocal));
  CHECK(t.current() == 8);
}

TEST_CASE("default candidates: 1 .. 64 MiB in powers of two", "[tuner]") {
  CHECK(bagua::default_bucket_candidates() ==
        std::vector<size_t>{1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20});
}
