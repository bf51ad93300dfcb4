// The core's run path on in-process ranks: the call check (ranks whose calls
// differ all get BAGUA_ERR_MISMATCH before any data moves, so a smaller
// buffer is never overrun), and the bytes a call sends as the library counts
// them, against the loopback's own count.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "core/run.hpp"
#include "spawn.hpp"

using bagua::Call;
using bagua::DType;
using bagua::ReduceOp;
using bagua::Schedule;
using bagua::Wire;

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
    const bagua::Status s = bagua::run_flat(ctx, call, schedule, bagua::Options{});
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
      return call_on(d, Wire::q8, 1000, DType::f32, first ? ReduceOp::sum : ReduceOp::avg);
    });
    for (bagua::Status s : o.status) CHECK(s == BAGUA_ERR_MISMATCH);
    // q8 vs q4 of the same count: the codecs differ, so do their messages.
    o = run_differing(n, Schedule::bytegrad, [](bool first, std::vector<float> &d) {
      return call_on(d, first ? Wire::q8 : Wire::q4, 1000, DType::f32, ReduceOp::sum);
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
    const bagua::Status s = bagua::run_flat(
        ctx, call_on(data, Wire::exact, 64, DType::f32, ReduceOp::sum), Schedule::ring, off);
    return s == BAGUA_SUCCESS && data[0] == 3.0f;
  });
  for (bool ok : results) CHECK(ok);
}
