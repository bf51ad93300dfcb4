// What every algorithm call receives: where to send, how to number its
// messages, until when to wait, and scratch memory owned by the caller.
#pragma once

#include <vector>

#include "../base/send_memory.hpp"
#include "../transport/transport.hpp"

namespace bagua {

// The tags of one call: an algorithm numbers its messages by step (any
// uint32; only the low bits of step_mask are kept). Messages with equal tags
// between the same pair of ranks stay in send order, so a wrapped step never
// mis-matches as long as receives are posted in the order the peer sends.
struct CallTags {
  Tag base = 0;
  uint32_t step_mask = 0;
  Tag at(uint32_t step) const { return base | (step & step_mask); }
};

struct AlgoContext {
  Transport &transport;
  CallTags tags;
  Deadline deadline;
  Bytes &scratch;
  size_t segment_bytes;  // pipeline granularity of segmented algorithms
};

}  // namespace bagua
