// What message tags mean (the transport only carries them): each
// communicator's tag space [0, max_tag] is cut into a call slot (high bits)
// and an algorithm step (low bits). See doc/transports.md, "Tags".
//
// Why so few fields suffice: every stream of calls that can be in flight at
// the same time on a rank has a duplicated communicator and transport of its
// own (blocking calls, nonblocking calls, each bucketed communicator, each
// asynchronous averager, the partial-reduce control plane, hierarchical
// node and leader communicators), so no family or stream bits are needed.
// Within one communicator:
//   - calls that run concurrently on a rank (nonblocking calls, buckets) get
//     distinct slots, at most slots() of them at once;
//   - point-to-point messages (bagua_send, bagua_recv) have the last slot
//     to themselves: blocking calls and partial-reduce groups cycle through
//     the others;
//   - successive calls reuse slots cyclically: a rank finishes a call only
//     after receiving every message its peers send it in that call, and
//     messages between two ranks with equal tags keep their order, so a
//     message of a later call is never matched by an earlier call's receive.
#pragma once

#include <cstdint>

#include "../algo/context.hpp"

namespace bagua {

class TagLayout {
 public:
  // At least 15 bits (MPI's guaranteed MPI_TAG_UB of 32767): 10 slot bits
  // and 5 step bits; more bits widen the step field first (up to 12), then
  // the slot field (up to 19 for 31-bit tags).
  static constexpr int kMinBits = 15;
  static constexpr int kMinSlotBits = 10;
  static constexpr int kMaxStepBits = 12;
  static constexpr int kMaxBits = 31;

  // The layout of [0, max_tag]; fails when max_tag < 2^kMinBits - 1.
  static Status make(Tag max_tag, TagLayout *out);

  int slot_bits() const { return slot_bits_; }
  int step_bits() const { return step_bits_; }
  // Distinct slots: calls in flight at once on one communicator.
  uint32_t slots() const { return uint32_t{1} << slot_bits_; }
  // The tags of a call in `slot` (taken modulo slots()).
  CallTags call(uint64_t slot) const;
  // The slots blocking collectives cycle through: all but the last.
  uint32_t collective_slots() const { return slots() - 1; }
  // The slot of point-to-point messages: the last one.
  uint64_t p2p_slot() const { return slots() - 1; }

 private:
  int slot_bits_ = kMinSlotBits;
  int step_bits_ = kMinBits - kMinSlotBits;
};

}  // namespace bagua
