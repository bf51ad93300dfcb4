// Exact allreduce (ring, recursive doubling) at 1..16 ranks x counts x
// dtypes x ops, in place and out of place, against closed-form results.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "algo/allreduce.hpp"
#include "check.hpp"
#include "spawn.hpp"

using bagua::DType;
using bagua::ReduceOp;
using inproc::Buffer;
using inproc::Outcome;

namespace {

// The calls into lib/algo (adapt here when the interfaces are renamed).
enum class Algo { ring, recursive_doubling };
bagua::Status allreduce(Algo algo, bagua::AlgoContext &ctx, const void *src, void *dst,
                        size_t count, DType t, ReduceOp op) {
  const bagua::AllreduceArgs args{src, dst, count, t, op};
  return algo == Algo::ring ? bagua::allreduce_ring(ctx, args)
                            : bagua::allreduce_recursive_doubling(ctx, args);
}

// Rank r's element i.
double input(int rank, size_t i) { return inproc::small_integer(uint64_t(rank), i); }

struct Case {
  Algo algo;
  DType type;
  ReduceOp op;
  size_t count;
  bool in_place;
  size_t segment_bytes;
};

// The documented result of every (type, op) of `cases` on n ranks: sum, max
// and min exact; the average the exact sum divided once (in float32 for
// float32 and the half types) and rounded to the type.
class Expected {
 public:
  Expected(int n, const std::vector<Case> &cases) {
    size_t count = 0;
    for (const Case &c : cases) count = std::max(count, c.count);
    for (const Case &c : cases) results_.try_emplace({c.type, c.op}, c.type, count);
    // Element by element: reduce over the ranks, then store every result.
    for (size_t i = 0; i < count; ++i) {
      double sum = 0, max = input(0, i), min = max;
      for (int r = 0; r < n; ++r) {
        sum += input(r, i);
        max = std::max(max, input(r, i));
        min = std::min(min, input(r, i));
      }
      for (auto &[key, buffer] : results_) {
        const auto [t, op] = key;
        const double avg = t == DType::f64 ? sum / n : double(float(sum) / float(n));
        buffer.set(i, op == ReduceOp::sum   ? sum
                      : op == ReduceOp::max ? max
                      : op == ReduceOp::min ? min
                                            : avg);
      }
    }
  }
  const Buffer &of(DType t, ReduceOp op) const { return results_.at({t, op}); }

 private:
  std::map<std::pair<DType, ReduceOp>, Buffer> results_;
};

std::string label(int n, const Case &c) {
  std::ostringstream s;
  s << (c.algo == Algo::ring ? "ring" : "recursive doubling") << " n " << n << " "
    << bagua::dtype_name(c.type) << " " << bagua::op_name(c.op) << " count " << c.count
    << (c.in_place ? " in place" : " out of place") << " segment " << c.segment_bytes;
  return s.str();
}

// One call on one rank, checked against the closed form.
Outcome run_case(inproc::Rank &rank, const Case &c, const Expected &want) {
  Buffer send(c.type, c.count), recv(c.type, c.count);
  Buffer &in = c.in_place ? recv : send;
  for (size_t i = 0; i < c.count; ++i) in.set(i, input(rank.rank(), i));
  bagua::AlgoContext ctx = rank.next_call(c.segment_bytes);
  Outcome o =
      inproc::outcome_of(allreduce(c.algo, ctx, in.data(), recv.data(), c.count, c.type, c.op));
  if (o.status == BAGUA_SUCCESS) o.wrong = recv.differences(want.of(c.type, c.op));
  o.guard_intact = send.guard_intact() && recv.guard_intact();
  o.digest = recv.digest();
  return o;
}

// Runs every case at n ranks (each rank runs them in order) and checks them.
void run_matrix(int n, const std::vector<Case> &cases) {
  const Expected want(n, cases);
  auto outcomes = inproc::run_cases(
      n, cases, [&](inproc::Rank &rank, const Case &c) { return run_case(rank, c, want); });
  inproc::check_outcomes(
      outcomes, cases.size(), [&](size_t c) { return label(n, cases[c]); }, true);
}

constexpr Algo kAlgos[] = {Algo::ring, Algo::recursive_doubling};
constexpr DType kTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};
constexpr ReduceOp kOps[] = {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg};

}  // namespace

TEST_CASE("allreduce at 1..16 ranks: small counts x every type and op", "[allreduce]") {
  for (int n = 1; n <= 16; ++n) {
    std::vector<Case> cases;
    // 256-byte segments: the 4099-element buffers run multi-segment pipelines.
    for (Algo algo : kAlgos)
      for (DType t : kTypes)
        for (ReduceOp op : kOps)
          for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(n - 1), size_t(4099)})
            for (bool in_place : {false, true})
              cases.push_back({algo, t, op, count, in_place, 256});
    run_matrix(n, cases);
  }
}

TEST_CASE("allreduce of 1<<20 elements at 2 3 7 16 ranks", "[allreduce]") {
  // Each op once per algorithm, sum and max in float32, avg and min in
  // bfloat16 (in place).
  const std::pair<DType, ReduceOp> subset[] = {{DType::f32, ReduceOp::sum},
                                               {DType::f32, ReduceOp::max},
                                               {DType::bf16, ReduceOp::avg},
                                               {DType::bf16, ReduceOp::min}};
  for (int n : {2, 3, 7, 16}) {
    std::vector<Case> cases;
    for (Algo algo : kAlgos)
      for (auto [t, op] : subset) cases.push_back({algo, t, op, 1u << 20, t == DType::bf16, 65536});
    run_matrix(n, cases);
  }
}

TEST_CASE("allreduce results are bit-identical on every rank", "[allreduce]") {
  // Non-integer inputs: the bits depend on the order of the additions.
  const size_t count = 4099;
  for (int n : {3, 5, 8, 13})
    for (Algo algo : kAlgos) {
      const Case c{algo, DType::f32, ReduceOp::sum, count, true, 512};
      auto outcomes = inproc::spawn(n, [&](bagua::Transport &t, int r) {
        inproc::Rank rank(t);
        Buffer data(DType::f32, count);
        for (size_t i = 0; i < count; ++i)
          data.set(i, 1.0 / double(1 + r + i % 1000) + 1e-3 * double(i % 7));
        bagua::AlgoContext ctx = rank.next_call(c.segment_bytes);
        Outcome o =
            inproc::outcome_of(allreduce(algo, ctx, data.data(), data.data(), count, c.type, c.op));
        o.digest = data.digest();
        return std::vector<Outcome>{o};
      });
      inproc::check_outcomes(
          outcomes, 1, [&](size_t) { return label(n, c); }, true);
    }
}
