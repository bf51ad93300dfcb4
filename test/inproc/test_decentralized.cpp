// Decentralized averaging with shift_one and ring peers at 1..16 ranks
// against the documented schedule and arithmetic, and the replicas of
// low-precision ring averaging.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "algo/decentralized.hpp"
#include "base/wires.hpp"
#include "check.hpp"
#include "codec.h"
#include "spawn.hpp"

using bagua::DType;
using bagua::PeerMode;
using inproc::Buffer;
using inproc::Outcome;

namespace {

// The calls into lib/algo (adapt here when the interfaces are renamed).
bagua::Status average(bagua::AlgoContext &ctx, PeerMode mode, int round, const void *src, void *dst,
                      size_t count, DType t) {
  const auto &transport = ctx.transport;
  const std::vector<int> peers = bagua::peers_of(mode, transport.rank(), transport.size(), round);
  return bagua::average_with_peers(ctx, src, dst, count, t, peers);
}
using Replicas = bagua::LowprecReplicas;
// The registry's low-precision codec at its default block.
bagua::LowprecCodec lowprec_codec() {
  return {*bagua::lowprec_wire().host, {bagua::codec::kDefaultQ8Block, 1, nullptr}};
}
bagua::Status init_replicas(bagua::AlgoContext &ctx, const void *x, size_t count, DType t,
                            Replicas *r) {
  return bagua::lowprec_init(ctx, x, count, t, lowprec_codec(), r);
}
bagua::Status step_replicas(bagua::AlgoContext &ctx, void *x, size_t count, DType t, Replicas *r) {
  return bagua::lowprec_step(ctx, x, count, t, lowprec_codec(), r);
}

int mod(int x, int n) { return ((x % n) + n) % n; }

// The documented shift_one partner (bagua.h, BAGUA_PEER_SHIFT_ONE): odd n,
// (s - r) mod n; even n, lower-half r meets n/2 + (r + s) mod n/2 and an
// upper-half rank meets the lower-half rank that names it.
int shift_one_partner(int rank, int n, int round) {
  if (n % 2 == 1) return mod(round - rank, n);
  const int half = n / 2;
  auto lower_partner = [&](int r) { return half + (r + round) % half; };
  if (rank < half) return lower_partner(rank);
  for (int r = 0; r < half; ++r)
    if (lower_partner(r) == rank) return r;
  return -1;
}

// The distinct ranks rank averages with in `round`, itself included.
std::vector<int> members(PeerMode mode, int rank, int n, int round) {
  std::vector<int> m{rank};
  if (mode == PeerMode::shift_one)
    m.push_back(shift_one_partner(rank, n, round));
  else
    m.insert(m.end(), {mod(rank - 1, n), mod(rank + 1, n)});
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  return m;
}

// Rank r's element i in `round`.
double input(int rank, int round, size_t i) {
  return inproc::small_integer(uint64_t(rank) * 64 + uint64_t(round), i);
}

// The documented arithmetic: the exact sum divided by the number of
// members in float32 (float64 for f64), rounded once to the type.
double expected(DType t, const std::vector<int> &ranks, int round, size_t i) {
  double sum = 0;
  for (int r : ranks) sum += input(r, round, i);
  const auto k = double(ranks.size());
  return t == DType::f64 ? sum / k : Buffer::round(t, double(float(sum) / float(k)));
}

struct Case {
  PeerMode mode;
  DType type;
  size_t count;
  int round;
  bool in_place;
  size_t segment_bytes = 1024;
};

std::string label(int n, const Case &c) {
  std::ostringstream s;
  s << (c.mode == PeerMode::shift_one ? "shift_one" : "ring") << " n " << n << " "
    << bagua::dtype_name(c.type) << " count " << c.count << " round " << c.round
    << (c.in_place ? " in place" : " out of place") << " segment " << c.segment_bytes;
  return s.str();
}

// Low-precision steps: 1 KiB pipeline segments.
constexpr size_t kSegmentBytes = 1024;

Outcome run_case(inproc::Rank &rank, const Case &c) {
  Buffer send(c.type, c.count), recv(c.type, c.count);
  Buffer &in = c.in_place ? recv : send;
  for (size_t i = 0; i < c.count; ++i) in.set(i, input(rank.rank(), c.round, i));
  bagua::AlgoContext ctx = rank.next_call(c.segment_bytes);
  Outcome o =
      inproc::outcome_of(average(ctx, c.mode, c.round, in.data(), recv.data(), c.count, c.type));
  const std::vector<int> ranks = members(c.mode, rank.rank(), rank.size(), c.round);
  // Compare each element with the documented average.
  for (size_t i = 0; i < c.count && o.status == BAGUA_SUCCESS; ++i)
    o.wrong += recv.get(i) != expected(c.type, ranks, c.round, i);
  o.guard_intact = send.guard_intact() && recv.guard_intact();
  return o;
}

void run_matrix(int n, const std::vector<Case> &cases) {
  auto outcomes = inproc::run_cases(n, cases, run_case);
  inproc::check_outcomes(outcomes, cases.size(), [&](size_t c) { return label(n, cases[c]); });
}

constexpr PeerMode kModes[] = {PeerMode::shift_one, PeerMode::ring};
constexpr DType kTypes[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

}  // namespace

TEST_CASE("decentralized average at 1..16 ranks: small counts x every type and mode",
          "[decentralized]") {
  for (int n = 1; n <= 16; ++n) {
    std::vector<Case> cases;
    // Seven elements over rounds 0..n (the whole shift_one schedule, odd
    // rounds in place); the other counts in rounds 0 and 1.
    for (PeerMode mode : kModes)
      for (DType t : kTypes) {
        for (int round = 0; round <= n; ++round)
          cases.push_back({mode, t, 7, round, round % 2 == 1});
        for (size_t count : {size_t(0), size_t(1), size_t(n - 1), size_t(4099)})
          for (int round : {0, 1}) cases.push_back({mode, t, count, round, round == 1});
      }
    run_matrix(n, cases);
  }
}

// The slower suite 'scale': the peer schedules at the seeds' rank counts,
// on rounds across the schedule (shift_one's peer is round-dependent).
TEST_CASE("decentralized average at 32..256 ranks", "[.][scale]") {
  for (int n : {32, 64, 128, 256}) {
    std::vector<Case> cases;
    for (PeerMode mode : kModes)
      for (DType t : {DType::f32, DType::f16})
        for (int round : {0, 1, n / 2, n - 1})
          for (size_t count : {size_t(7), size_t(4099)})
            cases.push_back({mode, t, count, round, round % 2 == 1});
    run_matrix(n, cases);
  }
}

TEST_CASE("decentralized average of 1<<20 elements at 2 3 7 16 ranks", "[decentralized]") {
  // One call per rank count: each mode at an odd and an even n, float32 and
  // float16, in place and out of place.
  constexpr size_t kLarge = 1u << 20, kSegment = 1u << 16;
  run_matrix(2, {{PeerMode::shift_one, DType::f32, kLarge, 1, false, kSegment}});
  run_matrix(3, {{PeerMode::ring, DType::f16, kLarge, 2, true, kSegment}});
  run_matrix(7, {{PeerMode::shift_one, DType::f16, kLarge, 6, true, kSegment}});
  run_matrix(16, {{PeerMode::ring, DType::f32, kLarge, 15, false, kSegment}});
}

namespace {

// What a rank holds after low-precision steps: its replicas, and whether
// its weights equal w rounded to the type.
struct LowprecResult {
  bagua::Status status = BAGUA_SUCCESS;
  std::string error;
  Replicas replicas;
  bool weights_are_w = false;
};

LowprecResult run_lowprec(inproc::Rank &rank, DType t, size_t count, int steps) {
  LowprecResult out;
  Buffer x(t, count);
  const int r = rank.rank();
  for (size_t i = 0; i < count; ++i) x.set(i, std::sin(double(i + 31 * r)));
  bagua::AlgoContext init = rank.next_call(kSegmentBytes);
  out.status = init_replicas(init, x.data(), count, t, &out.replicas);
  // Each step follows a rank-dependent local update.
  for (int step = 0; step < steps && out.status == BAGUA_SUCCESS; ++step) {
    for (size_t i = 0; i < count; ++i)
      x.set(i, x.get(i) - 0.01 * std::cos(double(i * size_t(r + 1) + size_t(step))));
    bagua::AlgoContext ctx = rank.next_call(kSegmentBytes);
    out.status = step_replicas(ctx, x.data(), count, t, &out.replicas);
  }
  if (out.status != BAGUA_SUCCESS) {
    out.error = bagua::last_error_message();
    return out;
  }
  out.weights_are_w = true;
  for (size_t i = 0; i < count; ++i)
    out.weights_are_w &= x.get(i) == Buffer::round(t, out.replicas.self[i]);
  return out;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("low-precision replicas stay bit-identical to the neighbours' weights",
          "[decentralized][lowprec]") {
  // 4099 elements: three q8 blocks of 2048, the last one partial.
  const size_t count = 4099;
  for (int n : {1, 2, 3, 4, 7, 16})
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      auto results = inproc::spawn(n, [&](bagua::Transport &tr, int) {
        inproc::Rank rank(tr);
        return run_lowprec(rank, t, count, 12);
      });
      for (int r = 0; r < n; ++r) {
        const LowprecResult &mine = results[size_t(r)];
        const LowprecResult &left = results[size_t(mod(r - 1, n))];
        const LowprecResult &right = results[size_t(mod(r + 1, n))];
        INFO("n " << n << " " << bagua::dtype_name(t) << " rank " << r << ": " << mine.error);
        REQUIRE(mine.status == BAGUA_SUCCESS);
        CHECK(same_bits(mine.replicas.self, left.replicas.right));
        CHECK(same_bits(mine.replicas.self, right.replicas.left));
        // One rank: a step does nothing, so the weights keep the local updates.
        CHECK(mine.weights_are_w == (n > 1));
      }
    }
}
