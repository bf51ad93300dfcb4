// Every family x wire of the support matrix (derived from the wire registry)
// whose calls run the core's flat run path (allreduce, iallreduce, bucket,
// partial), at 1..16 ranks: the schedule the policy selects for the family,
// the codec the run path builds, closed-form expected values. A wire added to
// the registry runs here with no edit beyond its bound in codecs.hpp.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>

#include "check.hpp"
#include "codecs.hpp"
#include "core/select.hpp"
#include "core/support.hpp"
#include "spawn.hpp"

using bagua::DType;
using bagua::Family;
using bagua::ReduceOp;
using bagua::Wire;

namespace {

struct Case {
  Family family;
  Wire wire;
  DType type;
  ReduceOp op;
  size_t count;
  inproc::Codec codec;  // the bound of a codec wire
};

std::string label(int n, const Case &c) {
  std::ostringstream s;
  s << bagua::family_name(c.family) << "/" << bagua::wire_name(c.wire) << " n " << n << " "
    << bagua::dtype_name(c.type) << " " << bagua::op_name(c.op) << " count " << c.count;
  return s.str();
}

// The test bound's codec of a registry wire (codecs.hpp names them); a
// codec wire without one fails the test.
inproc::Codec codec_of(Wire w) {
  const char *names[] = {"q8", "fp16", "bf16", "sign", "q4", "mxfp8"};
  for (size_t i = 0; i < std::size(names); ++i)
    if (std::strcmp(bagua::wire_name(w), names[i]) == 0) return inproc::Codec(i);
  if (bagua::is_codec(w)) FAIL("wire " << bagua::wire_name(w) << " has no bound in codecs.hpp");
  return inproc::Codec::q8;
}

// Exact sums: half types round to nearest after each of the n - 1
// additions (half an ulp of a partial sum, at most the sum of |inputs|
// `magnitude`), float32 likewise; an average divides the rounded sum.
double exact_bound(DType t, int n, double magnitude) {
  const double ulp = t == DType::f16 ? 0x1p-10 : t == DType::bf16 ? 0x1p-7 : 0x1p-23;
  return n * magnitude * ulp / 2 + 1e-6;
}

inproc::Outcome run_case(inproc::Rank &rank, const Case &c) {
  const int n = rank.size();
  const bool average = c.op == ReduceOp::avg;
  inproc::Buffer buf(c.type, c.count);
  for (size_t i = 0; i < c.count; ++i) buf.set(i, inproc::smooth(rank.rank(), i));
  const bagua::ScheduleInfo *schedule = nullptr;
  const bagua::Options options = [] {
    bagua::Options o;
    o.compressed.set_setting_blocks(inproc::kBlock);
    o.segment_bytes = 1024;
    return o;
  }();
  const bagua::Status selected = bagua::SelectionPolicy::of(options).select(
      c.family, c.wire, c.count * bagua::dtype_size(c.type), bagua::Memory::host, &schedule);
  if (selected != BAGUA_SUCCESS) return inproc::outcome_of(selected);
  bagua::SignFeedback feedback(MPI_COMM_NULL, c.count);
  bagua::Call call{c.family, c.wire, buf.data(),          buf.data(), c.count,
                   c.type,   c.op,   bagua::Memory::host, &feedback,  MPI_COMM_NULL};
  bagua::AlgoContext ctx = rank.next_call(options.segment_bytes);
  inproc::Outcome o = inproc::outcome_of(bagua::run_flat(ctx, call, *schedule, options));
  // Compare each element with the closed form.
  for (size_t i = 0; i < c.count && o.status == BAGUA_SUCCESS; ++i) {
    double sum = 0, magnitude = 0;
    for (int r = 0; r < n; ++r) {
      const double x = inproc::Buffer::round(c.type, inproc::smooth(r, i));
      sum += x;
      magnitude += std::fabs(x);
    }
    const double want = average ? sum / n : sum;
    const double b = bagua::is_codec(c.wire)
                         ? inproc::bound(c.codec, c.type, average, n, want, magnitude)
                         : exact_bound(c.type, n, magnitude);
    o.wrong += !(std::fabs(buf.get(i) - want) <= b);
  }
  o.guard_intact = buf.guard_intact();
  o.digest = buf.digest();
  return o;
}

// The rows of the support matrix this test runs, with every datatype and
// op of each (sign: its bound is per call, tested with its inputs in
// test_compressed.cpp).
std::vector<Case> matrix_cases() {
  std::vector<Case> cases;
  for (const bagua::SupportRow &row : bagua::support_matrix()) {
    const bool flat = row.family == Family::allreduce || row.family == Family::iallreduce ||
                      row.family == Family::bucket || row.family == Family::partial;
    if (!flat || bagua::wire_info(row.wire).error_feedback) continue;
    for (int t = 0; t < 4; ++t)
      for (int op : {int(ReduceOp::sum), int(ReduceOp::avg)}) {
        if (!(row.dtypes & (1u << t)) || !(row.ops & (1u << op))) continue;
        for (size_t count : {size_t(7), size_t(4099)})
          cases.push_back(
              {row.family, row.wire, DType(t), ReduceOp(op), count, codec_of(row.wire)});
      }
  }
  return cases;
}

void run_matrix(int n, const std::vector<Case> &cases) {
  auto outcomes = inproc::run_cases(n, cases, run_case);
  inproc::check_outcomes(
      outcomes, cases.size(), [&](size_t c) { return label(n, cases[c]); }, true);
}

}  // namespace

TEST_CASE("every family x wire of the support matrix at 1..16 ranks", "[families]") {
  const std::vector<Case> cases = matrix_cases();
  // Every registry wire without state appears (the matrix is derived).
  for (const bagua::WireInfo &w : bagua::wires()) {
    if (w.error_feedback) continue;
    INFO(w.name);
    CHECK(std::any_of(cases.begin(), cases.end(), [&](const Case &c) { return c.wire == w.id; }));
  }
  for (int n = 1; n <= 16; ++n) run_matrix(n, cases);
}

// The slower suite 'scale' (test/inproc/meson.build): the same matrix at
// the rank counts of the seeds' clusters, on float32 and float16 (one type
// of each width class; the others share their paths); 4099 elements up to
// 64 ranks (ByteGrad's n x n messages of a few elements make it 2 minutes
// at 128 and 256 on 2 cores), 7 (most chunks empty) at every count.
TEST_CASE("every family x wire of the support matrix at 32..256 ranks", "[.][scale]") {
  std::vector<Case> cases = matrix_cases();
  std::erase_if(cases, [](const Case &c) { return c.type != DType::f32 && c.type != DType::f16; });
  for (int n : {32, 64, 128, 256}) {
    if (n == 128) std::erase_if(cases, [](const Case &c) { return c.count != 7; });
    run_matrix(n, cases);
  }
}
