// The core's run path on in-process ranks: the call check (ranks whose calls
// differ all get BAGUA_ERR_MISMATCH before any data moves, so a smaller
// buffer is never overrun; a stateful call's non-finite input is refused on
// every rank), and the bytes a call sends as the library counts
// them, against the loopback's own count.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "../wire_ids.hpp"
#include "core/run.hpp"
#include "spawn.hpp"

using bagua::Call;
using bagua::DType;
using bagua::ReduceOp;
using bagua::Schedule;
using bagua::Wire;
namespace wire = bagua::wire;

namespace {

// An allreduce-family call on `data` (in place).
Call call_on(std::vector<float> &data, Wire wire, size_t count, DType t, ReduceOp op) {
  return {bagua::Family::allreduce, wire,    data.data(),  data.data(), count, t, op,
          bagua::Memory::host,      nullptr, MPI_COMM_NULL};
}

// Runs rank 0's call and everyone else's on n in-process ranks; returns the
// statuses, and whether any rank's buffer past its count was written.
struct Outcomes {
  std::vector<bagua::Status> status;
  bool overrun = false;
};

template <class Make>
Outcomes run_differing(int n, Schedule schedule, Make make) {
  Outcomes out;
  const auto results = inproc::spawn(n, [&](bagua::Transport &t, int r) {
    std::vector<float> data(8192, 1.0f);
    const Call call = make(r == 0, data);
    // A sentinel right after the call's elements.
    const size_t end = call.count * bagua::dtype_size(call.dtype) / sizeof(float);
    if (end < data.size()) data[end] = -7.0f;
    inproc::Rank rank(t);
    bagua::AlgoContext ctx = rank.next_call(1 << 12);
    const bagua::Status s =
        bagua::run_flat(ctx, call, bagua::schedule_info(schedule), bagua::Options{});
    return std::make_pair(s, end < data.size() && data[end] != -7.0f);
  });
  for (const auto &[s, overrun] : results) {
    out.status.push_back(s);
    out.overrun = out.overrun || overrun;
  }
  return out;
}

}  // namespace

TEST_CASE("run path: ranks whose calls differ all get MISMATCH, no buffer overrun", "[run]") {
  for (int n : {2, 3, 5}) {
    INFO(n << " ranks");
    // Counts differ (rank 0 has half): the smaller buffer must not be written past.
    Outcomes o = run_differing(n, Schedule::ring, [](bool first, std::vector<float> &d) {
      return call_on(d, Wire::exact, first ? 4096 : 8192, DType::f32, ReduceOp::sum);
    });
    for (bagua::Status s : o.status) CHECK(s == BAGUA_ERR_MISMATCH);
    CHECK_FALSE(o.overrun);
    // The same bytes meaning different things: float x 2048 vs double x 1024.
    o = run_differing(n, Schedule::recursive_doubling, [](bool first, std::vector<float> &d) {
      return call_on(d, Wire::exact, first ? 2048 : 1024, first ? DType::f32 : DType::f64,
                     ReduceOp::sum);
    });
    for (bagua::Status s : o.status) CHECK(s == BAGUA_ERR_MISMATCH);
    // Sum vs average through the q8 codec.
    o = run_differing(n, Schedule::bytegrad, [](bool first, std::vector<float> &d) {
      return call_on(d, wire::q8, 1000, DType::f32, first ? ReduceOp::sum : ReduceOp::avg);
    });
    for (bagua::Status s : o.status) CHECK(s == BAGUA_ERR_MISMATCH);
    // q8 vs q4 of the same count: the codecs differ, so do their messages.
    o = run_differing(n, Schedule::bytegrad, [](bool first, std::vector<float> &d) {
      return call_on(d, first ? wire::q8 : wire::q4, 1000, DType::f32, ReduceOp::sum);
    });
    for (bagua::Status s : o.status) CHECK(s == BAGUA_ERR_MISMATCH);
    // Agreeing calls still succeed.
    o = run_differing(n, Schedule::ring, [](bool, std::vector<float> &d) {
      return call_on(d, Wire::exact, 8192, DType::f32, ReduceOp::sum);
    });
    for (bagua::Status s : o.status) CHECK(s == BAGUA_SUCCESS);
  }
}

TEST_CASE("the call check can be switched off", "[run]") {
  bagua::Options off;
  off.check_calls = false;
  const auto results = inproc::spawn(3, [&](bagua::Transport &t, int) {
    std::vector<float> data(64, 1.0f);
    inproc::Rank rank(t);
    bagua::AlgoContext ctx = rank.next_call(1 << 12);
    const bagua::Status s =
        bagua::run_flat(ctx, call_on(data, Wire::exact, 64, DType::f32, ReduceOp::sum),
                        bagua::schedule_info(Schedule::ring), off);
    return s == BAGUA_SUCCESS && data[0] == 3.0f;
  });
  for (bool ok : results) CHECK(ok);
}

namespace {

// A sign call of `data` into `out` with its error-feedback residuals.
Call sign_call(std::vector<float> &data, std::vector<float> &out, bagua::SignFeedback &feedback) {
  Call call = call_on(data, wire::sign, data.size(), DType::f32, ReduceOp::sum);
  call.dst = out.data();
  call.feedback = &feedback;
  return call;
}

// On n ranks: a sign call, then one in which the last rank's input holds a
// NaN (every rank must refuse it, residuals unchanged), then a finite call,
// with the call check on or off. True on a rank where all of that held.
bool sign_survives_nan(int n, bool check_calls) {
  bagua::Options options;
  options.check_calls = check_calls;
  const auto results = inproc::spawn(n, [&](bagua::Transport &t, int r) {
    std::vector<float> data(300, 0.25f * float(r + 1)), out(300);
    bagua::SignFeedback feedback(MPI_COMM_NULL, data.size());
    inproc::Rank rank(t);
    const auto run = [&] {
      bagua::AlgoContext ctx = rank.next_call(1 << 12);
      return bagua::run_flat(ctx, sign_call(data, out, feedback),
                             bagua::schedule_info(Schedule::bytegrad), options);
    };
    bool ok = run() == BAGUA_SUCCESS;
    const std::vector<float> contribution = feedback.contribution, reduced = feedback.reduced;
    if (r == n - 1) data[17] = NAN;
    ok = ok && run() == BAGUA_ERR_INVALID_ARGUMENT;
    ok = ok && feedback.contribution == contribution && feedback.reduced == reduced;
    data[17] = 0.25f * float(r + 1);
    return ok && run() == BAGUA_SUCCESS;
  });
  return std::all_of(results.begin(), results.end(), [](bool ok) { return ok; });
}

// On n ranks: the check of a low-precision step (lowprec_step itself needs
// MPI) refuses on every rank when one rank's input holds an infinity.
bool lowprec_check_refuses(int n, int bad_rank) {
  const auto results = inproc::spawn(n, [&](bagua::Transport &t, int r) {
    std::vector<float> data(100, 1.0f);
    if (r == bad_rank) data[99] = INFINITY;
    Call call = call_on(data, wire::q8, data.size(), DType::f32, ReduceOp::avg);
    call.family = bagua::Family::lowprec;
    inproc::Rank rank(t);
    bagua::AlgoContext ctx = rank.next_call(1 << 12);
    const bagua::Status want = bad_rank < n ? BAGUA_ERR_INVALID_ARGUMENT : BAGUA_SUCCESS;
    return bagua::agree_on_call(ctx, call, Schedule::ring, bagua::Options{}) == want;
  });
  return std::all_of(results.begin(), results.end(), [](bool ok) { return ok; });
}

}  // namespace

TEST_CASE("a stateful call refuses a non-finite input on every rank, its state unchanged",
          "[run]") {
  for (int n = 1; n <= 16; ++n) {
    INFO(n << " ranks");
    CHECK(sign_survives_nan(n, true));
    CHECK(lowprec_check_refuses(n, n - 1));
    CHECK(lowprec_check_refuses(n, n));  // no bad rank: accepted
  }
  CHECK(sign_survives_nan(3, false));  // checked even without BAGUA_CHECK_CALLS
}
