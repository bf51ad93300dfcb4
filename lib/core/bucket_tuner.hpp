// Bucket-size autotuning (doc/buckets.md, "Automatic bucket size"): during
// the first steps the bucketed communicator runs each candidate byte cap for
// a warm-up step and timed steps, then every rank keeps the cap whose agreed
// time (the slowest rank's mean) is lowest. The schedule depends only on the
// step count, so every rank switches at the same step; the final choice is
// made from times agreed collectively. A state machine fed with step times,
// unit-tested on synthetic ones.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace bagua {

class BucketSizeTuner {
 public:
  // Turns this rank's mean time per candidate into the agreed ones (an
  // allreduce under MAX), the same on every rank.
  using Agree = std::function<void(std::vector<double> &)>;

  // `candidates`: the caps to try, in order (at least one).
  BucketSizeTuner(std::vector<size_t> candidates, int warmup_steps, int timed_steps);

  // The byte cap in effect for the coming step.
  size_t current() const { return candidates_[choice_]; }
  bool tuning() const { return tuning_; }
  const std::vector<size_t> &candidates() const { return candidates_; }

  // A step ended after `seconds`. Returns true when current() changed.
  bool on_step(double seconds, const Agree &agree);

 private:
  bool finish(const Agree &agree);

  std::vector<size_t> candidates_;
  std::vector<double> total_;  // timed seconds per candidate
  int warmup_, timed_;
  size_t choice_ = 0;  // the candidate in effect
  int step_ = 0;       // steps of the current candidate so far
  bool tuning_ = true;
};

// The caps tried by default: 1, 2, 4, ..., 64 MiB (BAGUA's and Horovod's
// autotuners search about this range).
std::vector<size_t> default_bucket_candidates();

}  // namespace bagua
