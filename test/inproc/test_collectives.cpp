// The data-movement collectives (barrier, bcast, allgather, gather, scatter,
// alltoall, reduce_scatter_block) through the core's run path, and the
// point-to-point mailbox, at 1..8 ranks against closed-form results: every
// element size, count 0, roots, in place; ranks whose calls differ.
#include <atomic>
#include <catch2/catch.hpp>
#include <sstream>

#include "algo/collectives.hpp"
#include "check.hpp"
#include "core/collectives.hpp"
#include "spawn.hpp"

using bagua::DType;
using bagua::Movement;
using bagua::MovementCall;
using bagua::ReduceOp;
using inproc::Outcome;

namespace {

// Byte k of block b of rank r's input: a misplaced block or byte shows.
unsigned char pattern(int r, int b, size_t k) {
  return static_cast<unsigned char>(r * 31 + b * 7 + k * 3 + (k >> 8));
}
constexpr unsigned char kUnset = 0x11;

// A byte buffer of `blocks` blocks followed by a guard area.
class Blocks {
 public:
  Blocks(int blocks, size_t block)
      : block_(block), bytes_(size_t(blocks) * block + inproc::Buffer::kGuardBytes, kUnset) {
    std::fill(bytes_.end() - inproc::Buffer::kGuardBytes, bytes_.end(), inproc::Buffer::kGuardByte);
  }
  unsigned char *at(int b) { return bytes_.data() + size_t(b) * block_; }
  // Block b holds rank r's block `of`.
  void fill(int b, int r, int of) {
    for (size_t k = 0; k < block_; ++k) at(b)[k] = pattern(r, of, k);
  }
  bool holds(int b, int r, int of) {
    for (size_t k = 0; k < block_; ++k)
      if (at(b)[k] != pattern(r, of, k)) return false;
    return true;
  }
  bool guard_intact() const {
    for (size_t i = bytes_.size() - inproc::Buffer::kGuardBytes; i < bytes_.size(); ++i)
      if (bytes_[i] != inproc::Buffer::kGuardByte) return false;
    return true;
  }

 private:
  size_t block_;
  std::vector<unsigned char> bytes_;
};

struct Case {
  Movement kind;
  size_t element, count;  // element size in bytes, elements per block
  int root;
  bool in_place;
};

std::string label(int n, const Case &c) {
  std::ostringstream s;
  s << bagua::movement_name(c.kind) << " n " << n << " " << c.count << " x " << c.element
    << " bytes root " << c.root << (c.in_place ? " in place" : "");
  return s.str();
}

// Rank r's buffers of a case, filled with its input, and its call (as
// describe_exchange / describe_bcast build it).
struct Setup {
  Blocks send, recv;
  MovementCall call;
};

Setup setup(const Case &c, int r, int n) {
  const size_t block = c.element * c.count;
  const bool root = r == c.root;
  const int send_blocks = c.kind == Movement::alltoall || c.kind == Movement::scatter ? n : 1;
  const int recv_blocks = c.kind == Movement::scatter || c.kind == Movement::bcast ? 1 : n;
  Setup s{Blocks(send_blocks, block),
          Blocks(recv_blocks, block),
          {c.kind, nullptr, nullptr, block, 7, c.root}};
  for (int b = 0; b < send_blocks; ++b) s.send.fill(b, r, b);
  s.call.send = s.send.at(0);
  s.call.recv = s.recv.at(0);
  switch (c.kind) {
    case Movement::bcast: s.call.recv = s.send.at(0); break;
    case Movement::allgather:
    case Movement::gather:
      if (c.in_place) s.recv.fill(r, r, 0);
      if (c.in_place) s.call.send = s.recv.at(r);
      break;
    case Movement::scatter:
      if (c.in_place && root) s.call.recv = s.send.at(r);
      break;
    case Movement::alltoall:
      for (int b = 0; c.in_place && b < n; ++b) s.recv.fill(b, r, b);
      if (c.in_place) s.call.send = s.recv.at(0);
      break;
    default: break;
  }
  return s;
}

// Whether rank r's output is the documented result.
bool correct(const Case &c, Setup &s, int r, int n) {
  switch (c.kind) {
    case Movement::bcast: return s.send.holds(0, c.root, 0);
    case Movement::allgather:
    case Movement::gather:
      for (int b = 0; b < n; ++b)
        if ((c.kind == Movement::allgather || r == c.root) && !s.recv.holds(b, b, 0)) return false;
      return true;
    case Movement::scatter: return (c.in_place && r == c.root) || s.recv.holds(0, c.root, r);
    case Movement::alltoall:
      for (int b = 0; b < n; ++b)
        if (!s.recv.holds(b, b, r)) return false;
      return true;
    default: return false;
  }
}

Outcome run_case(inproc::Rank &rank, const Case &c) {
  Setup s = setup(c, rank.rank(), rank.size());
  bagua::AlgoContext ctx = rank.next_call(1 << 12);
  Outcome o = inproc::outcome_of(bagua::run_movement(ctx, s.call, bagua::Options{}));
  if (o.status == BAGUA_SUCCESS) o.wrong = !correct(c, s, rank.rank(), rank.size());
  o.guard_intact = s.send.guard_intact() && s.recv.guard_intact();
  return o;
}

// Every case of `kinds` at n ranks: element sizes 1, 2, 4, 8 (every
// datatype class), counts 0, 1, 7, 1000, every root, in place and not.
std::vector<Case> cases_at(int n) {
  std::vector<Case> cases;
  for (Movement kind : {Movement::bcast, Movement::allgather, Movement::gather, Movement::scatter,
                        Movement::alltoall})
    for (size_t element : {1, 2, 4, 8})
      for (size_t count : {0, 1, 7, 1000})
        for (int root = 0; root < n; ++root)
          for (bool in_place : {false, true}) {
            const bool rooted = kind != Movement::allgather && kind != Movement::alltoall;
            if ((!rooted && root > 0) || (in_place && kind == Movement::bcast)) continue;
            cases.push_back({kind, element, count, rooted ? root : -1, in_place});
          }
  return cases;
}

}  // namespace

TEST_CASE("data movement at 1..8 ranks: every element size, count, root, in place",
          "[collectives]") {
  for (int n = 1; n <= 8; ++n) {
    const std::vector<Case> cases = cases_at(n);
    const auto outcomes = inproc::run_cases(n, cases, run_case);
    inproc::check_outcomes(outcomes, cases.size(), [&](size_t c) { return label(n, cases[c]); });
  }
}

TEST_CASE("barrier at 1..8 ranks: no rank leaves before every rank entered", "[collectives]") {
  for (int n = 1; n <= 8; ++n) {
    std::atomic<int> entered{0};
    const auto seen = inproc::spawn(n, [&](bagua::Transport &t, int) {
      inproc::Rank rank(t);
      bagua::AlgoContext ctx = rank.next_call(1 << 12);
      entered.fetch_add(1);
      const MovementCall call{Movement::barrier, nullptr, nullptr, 0, 0, -1};
      const bagua::Status s = bagua::run_movement(ctx, call, bagua::Options{});
      return std::make_pair(s, entered.load());
    });
    for (const auto &[status, count] : seen) {
      CHECK(status == BAGUA_SUCCESS);
      CHECK(count == n);
    }
  }
}

namespace {

// Rank r's element i of block b in reduce_scatter_block: for products 1, -1
// or 2 (every product of 8 is exact in every type), else small integers.
double rs_input(int r, int b, size_t i, ReduceOp op) {
  const double v = inproc::small_integer(uint64_t(r), size_t(b) * 1000 + i);
  const double factors[] = {1, -1, 2};
  return op == ReduceOp::prod ? factors[size_t(v + 15) % 3] : v;
}

// Block b's documented result: sum, max, min and product exact; the average
// the exact sum divided once in the compute type, rounded to the type.
double rs_expected(int n, int b, size_t i, DType t, ReduceOp op) {
  double sum = 0, max = rs_input(0, b, i, op), min = max, prod = 1;
  for (int r = 0; r < n; ++r) {
    const double v = rs_input(r, b, i, op);
    sum += v;
    prod *= v;
    max = std::max(max, v);
    min = std::min(min, v);
  }
  const double avg = t == DType::f64 ? sum / n : double(float(sum) / float(n));
  return inproc::Buffer::round(t, op == ReduceOp::sum    ? sum
                                  : op == ReduceOp::max  ? max
                                  : op == ReduceOp::min  ? min
                                  : op == ReduceOp::prod ? prod
                                                         : avg);
}

struct ReduceCase {
  DType type;
  ReduceOp op;
  size_t count;
  bool in_place;
};

Outcome run_reduce(inproc::Rank &rank, const ReduceCase &c) {
  const int n = rank.size(), r = rank.rank();
  inproc::Buffer send(c.type, c.count * size_t(n)), recv(c.type, c.count * size_t(n));
  inproc::Buffer &in = c.in_place ? recv : send;
  for (int b = 0; b < n; ++b)
    for (size_t i = 0; i < c.count; ++i) in.set(size_t(b) * c.count + i, rs_input(r, b, i, c.op));
  MovementCall call{Movement::reduce_scatter_block,      in.data(),        recv.data(),
                    c.count * bagua::dtype_size(c.type), uint32_t(c.type), -1};
  call.count = c.count;
  call.dtype = c.type;
  call.op = c.op;
  bagua::AlgoContext ctx = rank.next_call(256);
  Outcome o = inproc::outcome_of(bagua::run_movement(ctx, call, bagua::Options{}));
  for (size_t i = 0; o.status == BAGUA_SUCCESS && i < c.count; ++i)
    o.wrong += recv.get(i) != rs_expected(n, r, i, c.type, c.op);
  o.guard_intact = send.guard_intact() && recv.guard_intact();
  return o;
}

}  // namespace

TEST_CASE("reduce_scatter_block at 1..8 ranks: every type and op, in place", "[collectives]") {
  for (int n = 1; n <= 8; ++n) {
    std::vector<ReduceCase> cases;
    for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
      for (ReduceOp op :
           {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg, ReduceOp::prod})
        for (size_t count : {0, 1, 7, 300})
          for (bool in_place : {false, true}) cases.push_back({t, op, count, in_place});
    const auto outcomes = inproc::run_cases(n, cases, run_reduce);
    inproc::check_outcomes(outcomes, cases.size(), [&](size_t c) {
      std::ostringstream s;
      s << "reduce_scatter_block n " << n << " " << bagua::dtype_name(cases[c].type) << " "
        << bagua::op_name(cases[c].op) << " count " << cases[c].count
        << (cases[c].in_place ? " in place" : "");
      return s.str();
    });
  }
}

TEST_CASE("data movement: ranks whose calls differ all get MISMATCH, no overrun", "[collectives]") {
  // Rank 0 differs in the block size, the root or the element type.
  const std::pair<const char *, Case> differing[] = {
      {"count", {Movement::allgather, 4, 8, -1, false}},
      {"root", {Movement::bcast, 4, 8, 0, false}},
      {"type", {Movement::alltoall, 4, 8, -1, false}},
  };
  for (int n : {2, 3, 5})
    for (const auto &[what, base] : differing) {
      INFO(n << " ranks, " << what << " differs");
      const auto outcomes = inproc::spawn(n, [&](bagua::Transport &t, int r) {
        Case c = base;
        if (r == 0 && std::string(what) == "count") c.count = 4;
        if (r == 0 && std::string(what) == "root") c.root = 1;
        Setup s = setup(c, r, n);
        if (r == 0 && std::string(what) == "type") s.call.type = 8;
        inproc::Rank rank(t);
        bagua::AlgoContext ctx = rank.next_call(1 << 12);
        Outcome o = inproc::outcome_of(bagua::run_movement(ctx, s.call, bagua::Options{}));
        o.guard_intact = s.send.guard_intact() && s.recv.guard_intact();
        return o;
      });
      for (const Outcome &o : outcomes) {
        CHECK(o.status == BAGUA_ERR_MISMATCH);
        CHECK(o.guard_intact);
      }
    }
}

TEST_CASE("point-to-point: tags matched in MPI's order, exact sizes", "[collectives]") {
  for (int n : {2, 3, 8}) {
    INFO(n << " ranks");
    // Each rank sends tags 5, 9, 5 (sizes 3, 0, 4000 bytes) to its right
    // neighbour, which receives tag 9 first, then both tag-5 messages in order.
    const auto outcomes = inproc::spawn(n, [&](bagua::Transport &t, int r) {
      inproc::Rank rank(t);
      bagua::Mailbox mailbox;
      bagua::AlgoContext ctx = rank.next_call(1 << 12);
      Blocks first(1, 3), big(1, 4000), got_first(1, 3), got_big(1, 4000);
      first.fill(0, r, 1);
      big.fill(0, r, 2);
      const int right = (r + 1) % n, left = (r + n - 1) % n;
      Outcome o;
      o.status = mailbox.send(ctx, first.at(0), 3, right, 5);
      if (o.status == BAGUA_SUCCESS) o.status = mailbox.send(ctx, nullptr, 0, right, 9);
      if (o.status == BAGUA_SUCCESS) o.status = mailbox.send(ctx, big.at(0), 4000, right, 5);
      if (o.status == BAGUA_SUCCESS) o.status = mailbox.recv(ctx, nullptr, 0, left, 9);
      if (o.status == BAGUA_SUCCESS) o.status = mailbox.recv(ctx, got_first.at(0), 3, left, 5);
      if (o.status == BAGUA_SUCCESS) o.status = mailbox.recv(ctx, got_big.at(0), 4000, left, 5);
      o.wrong = !got_first.holds(0, left, 1) || !got_big.holds(0, left, 2);
      o.guard_intact = got_first.guard_intact() && got_big.guard_intact();
      return o;
    });
    for (const Outcome &o : outcomes) CHECK(o.ok());
  }
}

TEST_CASE("point-to-point: a receive of another size gets MISMATCH", "[collectives]") {
  const auto outcomes = inproc::spawn(2, [&](bagua::Transport &t, int r) {
    inproc::Rank rank(t);
    bagua::Mailbox mailbox;
    bagua::AlgoContext ctx = rank.next_call(1 << 12);
    Blocks buf(1, 8);
    if (r == 0) return mailbox.send(ctx, buf.at(0), 8, 1, 3);
    const bagua::Status s = mailbox.recv(ctx, buf.at(0), 4, 0, 3);
    return buf.guard_intact() ? s : BAGUA_ERR_INTERNAL;
  });
  CHECK(outcomes[0] == BAGUA_SUCCESS);
  CHECK(outcomes[1] == BAGUA_ERR_MISMATCH);
}
