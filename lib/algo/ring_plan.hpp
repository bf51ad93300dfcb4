// How buffers are cut: into pipeline segments (Segments), and for ring and
// chunked algorithms into n chunks of segments (RingPlan).
#pragma once

#include <algorithm>
#include <cstddef>

namespace bagua {

struct Range {
  size_t begin;
  size_t count;
};

// `count` elements cut into segments of `per` elements (the last may be
// shorter), each a message of its own so transfers pipeline.
class Segments {
 public:
  Segments(size_t count, size_t per) : count_(count), per_(std::max<size_t>(per, 1)) {}
  size_t count() const { return count_; }
  size_t number() const { return (count_ + per_ - 1) / per_; }
  // Segment k, relative to the start of the cut range.
  Range at(size_t k) const { return {k * per_, std::min(per_, count_ - k * per_)}; }

 private:
  size_t count_, per_;
};

// n chunks (sizes differ by at most one element), each cut into segments.
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
  size_t segments(int c) const { return Segments(chunk(c).count, segment_elems_).number(); }
  // Segment k of chunk c, relative to the start of the buffer.
  Range segment(int c, size_t k) const {
    const Range ch = chunk(c);
    const Range s = Segments(ch.count, segment_elems_).at(k);
    return {ch.begin + s.begin, s.count};
  }
  int ranks() const { return static_cast<int>(ranks_); }

 private:
  size_t count_;
  size_t ranks_;
  size_t segment_elems_;
};

inline int ring_mod(int x, int n) { return ((x % n) + n) % n; }

}  // namespace bagua
