// The partial-reduce data plane: disjoint groups average concurrently over
// SubgroupTransport views of one fabric, exactly (uniform or weighted, ring
// or recursive doubling) or through a codec (q8, fp16).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "../wire_ids.hpp"
#include "algo/subgroup.hpp"
#include "check.hpp"
#include "codecs.hpp"
#include "spawn.hpp"

using bagua::DType;
using inproc::Buffer;
using inproc::Codec;
using inproc::Outcome;

namespace {

// The calls into the library: the core's group average (core/run.hpp), as
// partial reduce runs it on a group's view of the transport.
bagua::Call group_call(bagua::Wire wire, const void *src, void *dst, size_t count, DType t) {
  return {bagua::Family::partial, wire,    src,          dst, count, t, bagua::ReduceOp::avg,
          bagua::Memory::host,    nullptr, MPI_COMM_NULL};
}
bagua::Status average_exact(bagua::AlgoContext &ctx, const void *src, void *dst, size_t count,
                            DType t, double weight, bool use_ring) {
  const auto schedule = use_ring ? bagua::Schedule::ring : bagua::Schedule::recursive_doubling;
  return bagua::average_in_group(ctx, group_call(bagua::Wire::exact, src, dst, count, t),
                                 bagua::schedule_info(schedule), weight, bagua::Options{});
}
bagua::Status average_compressed(bagua::AlgoContext &ctx, inproc::Codec codec, const void *src,
                                 void *dst, size_t count, DType t) {
  const bagua::Wire wire = codec == inproc::Codec::q8 ? bagua::wire::q8 : bagua::wire::fp16;
  bagua::Options options;
  options.compressed.set_setting_blocks(inproc::kBlock);
  return bagua::average_in_group(ctx, group_call(wire, src, dst, count, t),
                                 bagua::schedule_info(bagua::Schedule::bytegrad), -1, options);
}

// Rank r belongs to group r mod g, g = ceil(n / 4): at most four members,
// ascending.
std::vector<int> group_of(int rank, int n) {
  const int groups = (n + 3) / 4;
  std::vector<int> members;
  for (int r = rank % groups; r < n; r += groups) members.push_back(r);
  return members;
}

// Member j of k: weight 2^-(j+1), the last 2^-(k-1), so the weights sum to 1
// and every product and partial sum of small integers is exact in bfloat16.
double weight_of(size_t j, size_t k) { return std::ldexp(1.0, -int(j + 1 < k ? j + 1 : k - 1)); }

enum class Kind { uniform, weighted, q8, fp16 };

struct Case {
  Kind kind;
  bool use_ring;  // exact kinds only
  DType type;
  size_t count;
  bool in_place;
};

std::string label(const std::vector<int> &members, const Case &c) {
  const char *kinds[] = {"uniform", "weighted", "q8", "fp16"};
  std::ostringstream s;
  s << kinds[int(c.kind)] << (c.use_ring ? " ring" : " recursive doubling") << " group {";
  for (int m : members) s << " " << m;
  s << " } " << bagua::dtype_name(c.type) << " count " << c.count
    << (c.in_place ? " in place" : " out of place");
  return s.str();
}

bool compressed(Kind k) { return k == Kind::q8 || k == Kind::fp16; }
double input(const Case &c, int rank, size_t i) {
  return compressed(c.kind) ? inproc::smooth(rank, i) : inproc::small_integer(uint64_t(rank), i);
}

// Exact kinds: the expected value itself; compressed: the exact average that
// the result must be within the codec's bound of.
double expected(const Case &c, const std::vector<int> &members, size_t i) {
  double sum = 0;
  for (size_t j = 0; j < members.size(); ++j) {
    const double x = Buffer::round(c.type, input(c, members[j], i));
    sum += c.kind == Kind::weighted ? weight_of(j, members.size()) * x : x;
  }
  if (c.kind == Kind::weighted) return sum;
  const auto k = double(members.size());
  if (compressed(c.kind)) return sum / k;
  return c.type == DType::f64 ? sum / k : Buffer::round(c.type, double(float(sum) / float(k)));
}

bool within(const Case &c, int k, double got, double want) {
  if (!compressed(c.kind)) return got == want;
  const Codec codec = c.kind == Kind::q8 ? Codec::q8 : Codec::fp16;
  return std::fabs(got - want) <= inproc::bound(codec, c.type, true, k, want);
}

Outcome run_case(inproc::Rank &rank, const Case &c) {
  const std::vector<int> members = group_of(rank.rank(), rank.size());
  const auto local =
      size_t(std::find(members.begin(), members.end(), rank.rank()) - members.begin());
  bagua::SubgroupTransport group(rank.transport(), members, int(local));
  Buffer send(c.type, c.count), recv(c.type, c.count);
  Buffer &in = c.in_place ? recv : send;
  for (size_t i = 0; i < c.count; ++i) in.set(i, input(c, rank.rank(), i));
  bagua::AlgoContext ctx = rank.next_call(1024, &group);
  bagua::Status s = BAGUA_SUCCESS;
  if (compressed(c.kind)) {
    const Codec codec = c.kind == Kind::q8 ? Codec::q8 : Codec::fp16;
    s = average_compressed(ctx, codec, in.data(), recv.data(), c.count, c.type);
  } else {
    const double weight = c.kind == Kind::weighted ? weight_of(local, members.size()) : -1;
    s = average_exact(ctx, in.data(), recv.data(), c.count, c.type, weight, c.use_ring);
  }
  Outcome o = inproc::outcome_of(s);
  // Compare each element with the expected value.
  for (size_t i = 0; i < c.count && o.status == BAGUA_SUCCESS; ++i)
    o.wrong += !within(c, group.size(), recv.get(i), expected(c, members, i));
  o.guard_intact = send.guard_intact() && recv.guard_intact();
  o.digest = recv.digest();
  return o;
}

// Runs every case on n ranks in groups (group_of); a group's members must
// agree bit for bit.
void run_group_averages(int n) {
  std::vector<Case> cases;
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(4099)})
    for (bool in_place : {false, true}) {
      for (Kind kind : {Kind::uniform, Kind::weighted})
        for (bool use_ring : {true, false})
          for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
            cases.push_back({kind, use_ring, t, count, in_place});
      for (Kind kind : {Kind::q8, Kind::fp16})
        for (DType t : {DType::f32, DType::f16, DType::bf16})
          cases.push_back({kind, false, t, count, in_place});
    }
  auto outcomes = inproc::run_cases(n, cases, run_case);
  for (int first = 0; first < (n + 3) / 4; ++first) {
    const std::vector<int> members = group_of(first, n);
    std::vector<std::vector<Outcome>> of_group;
    for (int m : members) of_group.push_back(outcomes[size_t(m)]);
    inproc::check_outcomes(
        of_group, cases.size(), [&](size_t c) { return label(members, cases[c]); }, true);
  }
}

}  // namespace

TEST_CASE("group averages over subgroup views: exact and compressed", "[partial]") {
  for (int n : {1, 2, 5, 7, 16}) run_group_averages(n);
}

TEST_CASE("group averages over subgroup views at 128 ranks", "[.][scale]") {
  run_group_averages(128);
}
