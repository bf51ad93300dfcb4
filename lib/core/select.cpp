#include "select.hpp"

#include <limits>

#include "support.hpp"

namespace bagua {
namespace {

constexpr size_t kAny = std::numeric_limits<size_t>::max();
constexpr uint8_t kHost = 1u << unsigned(Memory::host);
constexpr uint8_t kAnyMemory = kHost | (1u << unsigned(Memory::cuda));
// A setting that names an algorithm outranks the defaults.
constexpr int kDefault = 10, kForced = 100;

ScoreRow rule(Wire wire, Schedule schedule, size_t min_bytes, size_t max_bytes, uint8_t memory,
              int score) {
  return {wire, &schedule_info(schedule), min_bytes, max_bytes, memory, score};
}

void add_exact_rules(const SelectionSettings &s, std::vector<ScoreRow> *rows) {
  // Default: recursive doubling below the threshold, the ring from it on.
  if (s.ring_threshold_bytes > 0)
    rows->push_back(rule(Wire::exact, Schedule::recursive_doubling, 0, s.ring_threshold_bytes - 1,
                         kHost, kDefault));
  rows->push_back(rule(Wire::exact, Schedule::ring, s.ring_threshold_bytes, kAny, kHost, kDefault));
  if (s.exact_algo == AllreduceAlgo::ring)
    rows->push_back(rule(Wire::exact, Schedule::ring, 0, kAny, kHost, kForced));
  if (s.exact_algo == AllreduceAlgo::recursive_doubling)
    rows->push_back(rule(Wire::exact, Schedule::recursive_doubling, 0, kAny, kHost, kForced));
}

// The families whose compressed calls run a ByteGrad schedule (low-precision
// decentralized averaging runs its own ring).
bool runs_bytegrad(Family f) {
  return f == Family::allreduce || f == Family::iallreduce || f == Family::bucket ||
         f == Family::partial;
}

void add_compressed_rules(const SelectionSettings &s, Family family, std::vector<ScoreRow> *rows) {
  if (!runs_bytegrad(family)) return;
  // Hierarchical mode replaces the flat schedule of the blocking calls
  // (host memory only); the other families always run flat.
  const bool hierarchical = s.hierarchical && family == Family::allreduce;
  for (const WireInfo &info : wires()) {
    if (!is_codec(info.id)) continue;
    const Wire w = info.id;
    // Device codecs serve the blocking allreduce; the core stages the
    // other families' device buffers.
    const uint8_t memory = family == Family::allreduce ? kAnyMemory : kHost;
    if (hierarchical)
      rows->push_back(rule(w, Schedule::hierarchical, 0, kAny, kHost, kForced));
    else
      rows->push_back(rule(w, Schedule::bytegrad, 0, kAny, memory, kDefault));
  }
}

}  // namespace

SelectionPolicy::SelectionPolicy(const SelectionSettings &settings)
    : hierarchical_(settings.hierarchical) {
  for (int f = 0; f < kFamilies; ++f) {
    add_exact_rules(settings, &rows_[f]);
    add_compressed_rules(settings, Family(f), &rows_[f]);
  }
}

const ScoreRow *SelectionPolicy::best_row(Family family, Wire wire, size_t bytes,
                                          Memory memory) const {
  const ScoreRow *best = nullptr;
  for (const ScoreRow &row : rows(family)) {
    const bool applies = row.wire == wire && bytes >= row.min_bytes && bytes <= row.max_bytes &&
                         (row.memory & (1u << unsigned(memory)));
    if (applies && (best == nullptr || row.score > best->score)) best = &row;
  }
  return best;
}

Status SelectionPolicy::select(Family family, Wire wire, size_t bytes, Memory memory,
                               const ScheduleInfo **out) const {
  const ScoreRow *best = best_row(family, wire, bytes, memory);
  if (best == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "no %s schedule runs on %s memory%s; pass host memory",
                wire_name(wire), memory == Memory::cuda ? "CUDA device" : "host",
                hierarchical_ ? " with BAGUA_HIERARCHICAL=1" : "");
  *out = best->schedule;
  return BAGUA_SUCCESS;
}

bool SelectionPolicy::runs_on_device(Family family, Wire wire, size_t bytes) const {
  return best_row(family, wire, bytes, Memory::cuda) != nullptr;
}

}  // namespace bagua
