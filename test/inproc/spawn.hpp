// The in-process harness: n ranks as n threads of this process, connected by
// a LoopbackFabric (model: gloo's test/base_test.h spawn()), and the per-rank
// state an algorithm call needs.
//
// Catch2's assertions are not thread-safe, so rank bodies never assert: they
// return what they observed, and the test thread checks it after the join.
#pragma once

#include <exception>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "algo/allreduce.hpp"
#include "core/tags.hpp"
#include "transport/loopback_transport.hpp"

namespace inproc {

// Runs body(transport, rank) on n threads and joins them. Returns the bodies'
// results indexed by rank (nothing for a void body); an exception thrown by a
// body is rethrown here, after every thread has finished.
template <class Body>
auto spawn(int n, Body body) {
  using Result = std::invoke_result_t<Body &, bagua::Transport &, int>;
  bagua::LoopbackFabric fabric(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  constexpr bool returns = !std::is_void_v<Result>;
  // One slot per rank: a struct, since threads writing neighbouring elements
  // of a std::vector<bool> would race.
  struct Slot {
    std::conditional_t<returns, Result, char> value;
  };
  std::vector<Slot> slots(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      const auto i = static_cast<size_t>(r);
      try {
        if constexpr (returns)
          slots[i].value = body(fabric.endpoint(r), r);
        else
          body(fabric.endpoint(r), r);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (std::thread &t : threads) t.join();
  for (const std::exception_ptr &e : errors)
    if (e) std::rethrow_exception(e);
  if constexpr (returns) {
    std::vector<Result> results;
    for (Slot &slot : slots) results.push_back(std::move(slot.value));
    return results;
  }
}

// Waits end with BAGUA_ERR_TIMEOUT after this long: a hang fails the test
// instead of blocking it (no test depends on the value).
constexpr int64_t kTimeoutMs = 60000;

// One rank's calls: scratch reused across calls, and the next tag slot of
// the transport's layout per call (as a communicator gives its blocking
// calls). Rank objects used at the same time on one transport take
// interleaved slots: stream s of `streams` uses slots s, s + streams, ...
class Rank {
 public:
  explicit Rank(bagua::Transport &t, uint64_t stream = 0, uint64_t streams = 1)
      : transport_(t), next_slot_(stream), streams_(streams) {
    if (bagua::TagLayout::make(t.max_tag(), &layout_) != BAGUA_SUCCESS)
      throw std::runtime_error("inproc::Rank: the transport's tags are too narrow");
  }

  bagua::Transport &transport() const { return transport_; }
  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }

  // The context of the next call (on `transport`, by default this rank's).
  bagua::AlgoContext next_call(size_t segment_bytes, bagua::Transport *transport = nullptr) {
    const bagua::CallTags tags = layout_.call(next_slot_);
    next_slot_ += streams_;
    return bagua::AlgoContext{transport ? *transport : transport_, tags,
                              bagua::Deadline::after_ms(kTimeoutMs), scratch_, segment_bytes};
  }

 private:
  bagua::Transport &transport_;
  bagua::TagLayout layout_;
  uint64_t next_slot_;
  const uint64_t streams_;
  bagua::Bytes scratch_;
};

// Runs `cases` on n ranks, every rank all of them in order: the results of
// run(rank, case) by rank, then by case.
template <class Case, class Run>
auto run_cases(int n, const std::vector<Case> &cases, Run run) {
  return spawn(n, [&](bagua::Transport &t, int) {
    Rank rank(t);
    std::vector<std::invoke_result_t<Run &, Rank &, const Case &>> out;
    for (const Case &c : cases) out.push_back(run(rank, c));
    return out;
  });
}

}  // namespace inproc
