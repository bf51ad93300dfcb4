// The selection policy, as data: for a call's wire
// format, size and memory type, which schedule runs. A communicator builds
// its policy once from its settings (Communicator::policy()); every caller
// (the flat calls, nonblocking calls, buckets, partial reduce, decentralized
// `all`, asynchronous averaging, and bagua_allreduce_bytes for the trainer)
// asks it; nothing else decides. Unit-tested without MPI.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "call.hpp"
#include "options.hpp"
#include "schedules.hpp"

namespace bagua {

// The settings the policy reads (BAGUA_ALLREDUCE_SCHEDULE, BAGUA_RING_THRESHOLD,
// BAGUA_HIERARCHICAL).
struct SelectionSettings {
  AllreduceAlgo exact_algo = AllreduceAlgo::automatic;
  size_t ring_threshold_bytes = size_t(env_default_int("BAGUA_RING_THRESHOLD"));
  bool hierarchical = false;

  static SelectionSettings from(const Options &o) {
    return {o.allreduce_algo, o.ring_threshold_bytes, o.compressed.hierarchical};
  }
};

// One rule: `schedule` (the row that runs it) may run `wire` for messages
// of [min_bytes, max_bytes] in the memory types of `memory` (bit per
// Memory), with `score`; the highest-scoring rule that applies wins.
struct ScoreRow {
  Wire wire;
  const ScheduleInfo *schedule;
  size_t min_bytes, max_bytes;
  uint8_t memory;
  int score;
};

// The rules of every family under one set of settings, built once.
class SelectionPolicy {
 public:
  explicit SelectionPolicy(const SelectionSettings &settings = {});
  static SelectionPolicy of(const Options &o) {
    return SelectionPolicy(SelectionSettings::from(o));
  }

  // The rules for `family` (printed by bagua-info).
  const std::vector<ScoreRow> &rows(Family family) const { return rows_[size_t(family)]; }
  // The schedule of a call of `bytes` bytes, the row its caller runs; fails
  // (naming the setting) when no rule applies, e.g. CUDA buffers with
  // BAGUA_HIERARCHICAL=1.
  Status select(Family family, Wire wire, size_t bytes, Memory memory,
                const ScheduleInfo **out) const;
  // Whether a device-buffer call of family, wire and size has a schedule
  // that runs on device memory (the compressed allreduce's device codecs).
  // The core stages every other device-buffer call through page-locked host
  // memory (run.cpp, with_runnable_buffers).
  bool runs_on_device(Family family, Wire wire, size_t bytes) const;

 private:
  const ScoreRow *best_row(Family family, Wire wire, size_t bytes, Memory memory) const;

  bool hierarchical_;
  std::array<std::vector<ScoreRow>, kFamilies> rows_;
};

}  // namespace bagua
