// How a buffer is cut for ring algorithms: n chunks (sizes differ by at most
// one element), each cut into pipeline segments.
#pragma once

#include <algorithm>
#include <cstddef>

namespace bagua {

struct Range {
  size_t begin;
  size_t count;
};

class RingPlan {
 public:
  RingPlan(size_t count, int ranks, size_t segment_elems)
      : count_(count),
        ranks_(static_cast<size_t>(ranks)),
        segment_elems_(std::max<size_t>(segment_elems, 1)) {}

  // Chunk c of n: the first (count % n) chunks hold one extra element.
  Range chunk(int c) const {
    const size_t base = count_ / ranks_, extra = count_ % ranks_, uc = static_cast<size_t>(c);
    return {uc * base + std::min(uc, extra), base + (uc < extra ? 1 : 0)};
  }
  size_t max_chunk() const { return chunk(0).count; }
  size_t segments(int c) const {
    const size_t n = chunk(c).count;
    return n == 0 ? 0 : (n + segment_elems_ - 1) / segment_elems_;
  }
  // Segment k of chunk c, relative to the start of the buffer.
  Range segment(int c, size_t k) const {
    const Range ch = chunk(c);
    const size_t begin = k * segment_elems_;
    return {ch.begin + begin, std::min(segment_elems_, ch.count - begin)};
  }
  int ranks() const { return static_cast<int>(ranks_); }

 private:
  size_t count_;
  size_t ranks_;
  size_t segment_elems_;
};

inline int ring_mod(int x, int n) { return ((x % n) + n) % n; }

}  // namespace bagua
