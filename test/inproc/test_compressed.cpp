// The compressed allreduce (ByteGrad) with the q8, q4, fp16/bf16 cast and sign
// codecs at 1..16 ranks: within the documented error bound of the exact
// result, bit-identical on every rank, in place and out of place.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <iterator>
#include <limits>
#include <sstream>

#include "algo/compressed.hpp"
#include "check.hpp"
#include "codecs.hpp"
#include "spawn.hpp"

using bagua::DType;
using inproc::bound;
using inproc::Buffer;
using inproc::Codec;
using inproc::make_codec;
using inproc::Outcome;
using inproc::SignResiduals;
using inproc::smooth;

namespace {

// The calls into lib/algo (adapt here when the interfaces are renamed).
bagua::Status allreduce(bagua::AlgoContext &ctx, bagua::ChunkCodec &codec, const void *src,
                        void *dst, size_t count, DType t, int divisor) {
  return bagua::allreduce_compressed(ctx, codec, {src, t, dst, t, count, divisor});
}

const char *codec_name(Codec c) {
  const char *names[] = {"q8", "fp16", "bf16", "sign", "q4", "mxfp8"};
  return names[static_cast<int>(c)];
}

struct Case {
  Codec codec;
  DType type;
  bool average;
  size_t count;
  bool in_place;
  size_t segment_bytes;
};

std::string label(int n, const Case &c) {
  std::ostringstream s;
  s << codec_name(c.codec) << " n " << n << " " << bagua::dtype_name(c.type)
    << (c.average ? " avg" : " sum") << " count " << c.count
    << (c.in_place ? " in place" : " out of place") << " segment " << c.segment_bytes;
  return s.str();
}

// The exact sums over n ranks of the inputs as stored in each type.
class Exact {
 public:
  Exact(int n, size_t count) : n_(n) {
    for (DType t : {DType::f32, DType::f16, DType::bf16}) sums_[index(t)].assign(count, 0);
    abs_sums_.assign(count, 0);
    for (size_t i = 0; i < count; ++i)
      for (int r = 0; r < n; ++r) {
        for (DType t : {DType::f32, DType::f16, DType::bf16})
          sums_[index(t)][i] += Buffer::round(t, smooth(r, i));
        abs_sums_[i] += std::fabs(smooth(r, i));
      }
  }
  double operator()(DType t, bool average, size_t i) const {
    const double sum = sums_[index(t)][i];
    return average ? sum / n_ : sum;
  }
  // The sum of the ranks' |inputs| at i (what mxfp8's relative errors scale with).
  double magnitude(size_t i) const { return abs_sums_[i] * 1.01; }

 private:
  static size_t index(DType t) { return t == DType::f32 ? 0 : t == DType::f16 ? 1 : 2; }
  int n_;
  std::vector<double> sums_[3];
  std::vector<double> abs_sums_;
};

// One call on one rank: smooth inputs for q8, q4 and cast, checked against the
// bound; +-0.5 in one sign pattern on every rank for sign, which it
// represents exactly (every block's scale is 0.5, the sum's 0.5 n).
Outcome run_case(inproc::Rank &rank, const Case &c, const Exact &exact) {
  const int n = rank.size();
  const bool sign = c.codec == Codec::sign;
  Buffer send(c.type, c.count), recv(c.type, c.count);
  Buffer &in = c.in_place ? recv : send;
  auto value = [&](size_t i) { return (i * 7919 % 13) < 6 ? -0.5 : 0.5; };
  for (size_t i = 0; i < c.count; ++i) in.set(i, sign ? value(i) : smooth(rank.rank(), i));
  SignResiduals residuals(c.count);
  const auto codec = make_codec(c.codec, n, c.average, residuals);
  bagua::AlgoContext ctx = rank.next_call(c.segment_bytes);
  Outcome o = inproc::outcome_of(
      allreduce(ctx, *codec, in.data(), recv.data(), c.count, c.type, c.average ? n : 1));
  // Compare each element with the exact value.
  for (size_t i = 0; i < c.count && o.status == BAGUA_SUCCESS; ++i) {
    if (sign) {
      o.wrong += recv.get(i) != value(i) * (c.average ? 1 : n);
    } else {
      const double want = exact(c.type, c.average, i);
      const double b = bound(c.codec, c.type, c.average, n, want, exact.magnitude(i));
      o.wrong += !(std::fabs(recv.get(i) - want) <= b);
    }
  }
  o.guard_intact = send.guard_intact() && recv.guard_intact();
  o.digest = recv.digest();
  return o;
}

void run_matrix(int n, const std::vector<Case> &cases) {
  size_t largest = 0;
  for (const Case &c : cases) largest = std::max(largest, c.count);
  const Exact exact(n, largest);
  auto outcomes = inproc::run_cases(
      n, cases, [&](inproc::Rank &rank, const Case &c) { return run_case(rank, c, exact); });
  inproc::check_outcomes(
      outcomes, cases.size(), [&](size_t c) { return label(n, cases[c]); }, true);
}

// Quantization steps per block range of a min-max codec; mxfp8's relative
// error is at most 1/16.
double levels(Codec codec) {
  return codec == Codec::q4 ? 15.0 : codec == Codec::mxfp8 ? 16.0 : 255.0;
}

// Inputs whose sums overflow float: the first half of the buffer is +-0.75
// FLT_MAX, the rest +-0.5, in one sign pattern on every rank.
double overflow_input(size_t i, size_t count) {
  const double magnitude = i < count / 2 ? 0.75 * double(std::numeric_limits<float>::max()) : 0.5;
  return (i * 7919 % 13) < 6 ? -magnitude : magnitude;
}

// One call with overflow_input on one rank. The sums of the first half
// saturate at +-FLT_MAX (an average divides the saturated sum by n); the
// second half is within the usual bound (q8, q4) or exact (sign). Elements
// within one block of the boundary share blocks with both halves: they are
// only checked to be finite and, elsewhere, never NaN or Inf.
Outcome run_overflow_case(inproc::Rank &rank, const Case &c) {
  const int n = rank.size();
  const double max = std::numeric_limits<float>::max();
  Buffer send(c.type, c.count), recv(c.type, c.count);
  Buffer &in = c.in_place ? recv : send;
  for (size_t i = 0; i < c.count; ++i) in.set(i, overflow_input(i, c.count));
  SignResiduals residuals(c.count);
  const auto codec = make_codec(c.codec, n, c.average, residuals);
  bagua::AlgoContext ctx = rank.next_call(c.segment_bytes);
  Outcome o = inproc::outcome_of(
      allreduce(ctx, *codec, in.data(), recv.data(), c.count, c.type, c.average ? n : 1));
  const size_t half = c.count / 2;
  // Compare each element with the saturated (or exact) sum.
  for (size_t i = 0; i < c.count && o.status == BAGUA_SUCCESS; ++i) {
    const double got = recv.get(i), x = overflow_input(i, c.count);
    const bool big = i < half, near_boundary = (i < half ? half - i : i - half) <= inproc::kBlock;
    const double sum = big ? std::copysign(max, x) : x * n;
    const double want = c.average ? double(float(sum / n)) : sum;
    const double tolerance = c.codec == Codec::sign ? 0.0
                             : big                  ? std::fabs(want) / levels(c.codec) * 1.001
                                                    : bound(c.codec, c.type, c.average, n, want);
    o.wrong += !std::isfinite(got) || (!near_boundary && !(std::fabs(got - want) <= tolerance));
  }
  o.guard_intact = send.guard_intact() && recv.guard_intact();
  o.digest = recv.digest();
  return o;
}

constexpr Codec kCodecs[] = {Codec::q8,   Codec::q4,   Codec::fp16,
                             Codec::bf16, Codec::sign, Codec::mxfp8};
constexpr DType kTypes[] = {DType::f32, DType::f16, DType::bf16};

}  // namespace

TEST_CASE("compressed allreduce at 1..16 ranks: small counts x every codec and type",
          "[compressed]") {
  for (int n = 1; n <= 16; ++n) {
    std::vector<Case> cases;
    // 1 KiB segments (256 elements, 4 blocks): 4099 elements run a
    // multi-segment, multi-block pipeline. Each count runs in place for one
    // of sum and average and out of place for the other.
    const size_t counts[] = {0, 1, 7, size_t(n - 1), 4099};
    for (Codec codec : kCodecs)
      for (DType t : kTypes)
        for (bool average : {false, true})
          for (size_t k = 0; k < std::size(counts); ++k)
            cases.push_back({codec, t, average, counts[k], (k % 2 == 0) == average, 1024});
    run_matrix(n, cases);
  }
}

TEST_CASE("compressed allreduce of 1<<20 elements at 2 3 7 16 ranks", "[compressed]") {
  // One call per codec: the bf16 cast on float32 input, the others on
  // bfloat16; averages at odd n, sums at even n; q8 and q4 out of place.
  for (int n : {2, 3, 7, 16}) {
    std::vector<Case> cases;
    for (Codec codec : kCodecs)
      cases.push_back({codec, codec == Codec::bf16 ? DType::f32 : DType::bf16, n % 2 == 1, 1u << 20,
                       codec != Codec::q8 && codec != Codec::q4, 1 << 16});
    run_matrix(n, cases);
  }
}

TEST_CASE("compressed allreduce: a finite overflow saturates and never becomes NaN",
          "[compressed]") {
  // q8, q4, sign and mxfp8 flag non-finite inputs only: sums of +-0.75 FLT_MAX saturate
  // on every rank instead of turning their blocks (and, through the owner's
  // re-encoding, neighbouring ranges) into NaN.
  for (int n : {2, 3}) {
    std::vector<Case> cases;
    for (Codec codec : {Codec::q8, Codec::q4, Codec::sign, Codec::mxfp8})
      for (bool average : {false, true})
        for (size_t count : {size_t(4099), size_t(1000)})
          cases.push_back({codec, DType::f32, average, count, count == 1000, 4096});
    auto outcomes = inproc::run_cases(n, cases, run_overflow_case);
    inproc::check_outcomes(
        outcomes, cases.size(), [&](size_t c) { return label(n, cases[c]); }, true);
  }
}

TEST_CASE("sign error feedback: the mean over calls tracks the exact sum", "[compressed]") {
  // The same gradient every call: the residuals carry what each 1-bit
  // result missed into the next call.
  const size_t count = 3001;
  const int calls = 64;
  for (int n : {2, 5}) {
    const Exact exact(n, count);
    auto errors = inproc::spawn(n, [&](bagua::Transport &t, int r) {
      inproc::Rank rank(t);
      SignResiduals residuals(count);
      const auto codec = make_codec(Codec::sign, n, false, residuals);
      Buffer in(DType::f32, count), out(DType::f32, count);
      for (size_t i = 0; i < count; ++i) in.set(i, smooth(r, i));
      std::vector<double> total(count, 0.0);
      // Root-mean-square error of total / scale against the exact sum.
      auto rms_error = [&](double scale) {
        double sq = 0;
        for (size_t i = 0; i < count; ++i)
          sq += std::pow(total[i] / scale - exact(DType::f32, false, i), 2);
        return std::sqrt(sq / double(count));
      };
      double first = -1;
      for (int call = 0; call < calls; ++call) {
        bagua::AlgoContext ctx = rank.next_call(4096);
        if (allreduce(ctx, *codec, in.data(), out.data(), count, DType::f32, 1) != BAGUA_SUCCESS)
          return std::pair{-1.0, -1.0};
        for (size_t i = 0; i < count; ++i) total[i] += out.get(i);
        if (call == 0) first = rms_error(1);
      }
      return std::pair{first, rms_error(calls)};
    });
    for (const auto &[first, mean] : errors) {
      INFO(n << " ranks: error of one call " << first << ", of the mean of " << calls << " "
             << mean);
      CHECK(first > 0);
      CHECK(mean * 5 < first);
      CHECK(mean < 0.02 * n);
    }
  }
}

namespace {

// A codec whose decoders defer their verdict, as the device codecs do: it
// forwards to the host q8 codec of an n-rank call, returns ok at once and
// reports the real status (or, at decode_accumulate number fail_at,
// corrupt_header) from finish_decodes.
class DeferringCodec final : public bagua::ChunkCodec {
 public:
  DeferringCodec(int n, size_t count, int fail_at)
      : residuals_(count), inner_(make_codec(Codec::q8, n, false, residuals_)), fail_at_(fail_at) {}
  size_t encoded_bytes(size_t count) const override { return inner_->encoded_bytes(count); }
  size_t block_elems() const override { return inner_->block_elems(); }
  bagua::codec::CodecStatus encode(Stage stage, size_t position, const void *src, DType t,
                                   size_t count, void *out) override {
    return inner_->encode(stage, position, src, t, count, out);
  }
  bagua::codec::CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst,
                                   DType t) override {
    return defer(inner_->decode(in, bytes, count, dst, t));
  }
  bagua::codec::CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count,
                                              float *acc) override {
    const auto st = inner_->decode_accumulate(in, bytes, count, acc);
    return defer(++accumulates_ == fail_at_ ? bagua::codec::CodecStatus::corrupt_header : st);
  }
  bagua::codec::CodecStatus finish_decodes() override {
    const auto st = first_failure_;
    first_failure_ = bagua::codec::CodecStatus::ok;
    pending_ = 0;
    return st;
  }
  // Decodes whose verdict nobody waited for.
  int pending() const { return pending_; }

 private:
  bagua::codec::CodecStatus defer(bagua::codec::CodecStatus st) {
    ++pending_;
    if (first_failure_ == bagua::codec::CodecStatus::ok) first_failure_ = st;
    return bagua::codec::CodecStatus::ok;
  }

  SignResiduals residuals_;
  const std::unique_ptr<bagua::ChunkCodec> inner_;
  const int fail_at_;
  int accumulates_ = 0, pending_ = 0;
  bagua::codec::CodecStatus first_failure_ = bagua::codec::CodecStatus::ok;
};

}  // namespace

TEST_CASE("compressed allreduce waits for deferred decode verdicts", "[compressed]") {
  // Without a failure: the result of the host codec, and no verdict left
  // unread at the end of the call.
  const int n = 3;
  const size_t count = 4099;
  auto results = inproc::spawn(n, [&](bagua::Transport &t, int r) {
    inproc::Rank rank(t);
    SignResiduals residuals(count);
    const auto plain = make_codec(Codec::q8, n, false, residuals);
    DeferringCodec deferring(n, count, 0);
    std::vector<float> in(count), want(count), got(count);
    for (size_t i = 0; i < count; ++i) in[i] = float(smooth(r, i));
    bagua::AlgoContext a = rank.next_call(4096), b = rank.next_call(4096);
    const bool ok =
        allreduce(a, *plain, in.data(), want.data(), count, DType::f32, 1) == BAGUA_SUCCESS &&
        allreduce(b, deferring, in.data(), got.data(), count, DType::f32, 1) == BAGUA_SUCCESS;
    return std::tuple{ok, want == got, deferring.pending()};
  });
  for (const auto &[ok, same, pending] : results) {
    CHECK(ok);
    CHECK(same);
    CHECK(pending == 0);
  }
}

TEST_CASE("compressed allreduce: a failed deferred decode fails the call before its segment leaves",
          "[compressed]") {
  // Rank 0's first contribution fails to decode: rank 0 reports corrupt
  // data, and its reduced segment never reaches the others, whose calls end
  // at their (short) deadline instead of returning a wrong result.
  const int n = 3;
  const size_t count = 4099;
  auto results = inproc::spawn(n, [&](bagua::Transport &t, int r) {
    inproc::Rank rank(t);
    DeferringCodec deferring(n, count, r == 0 ? 1 : 0);
    std::vector<float> in(count, 1.0f), out(count);
    bagua::AlgoContext ctx = rank.next_call(4096);
    ctx.deadline = bagua::Deadline::after_ms(2000);
    return allreduce(ctx, deferring, in.data(), out.data(), count, DType::f32, 1);
  });
  CHECK(results[0] == BAGUA_ERR_CORRUPT_DATA);
  for (int r = 1; r < n; ++r) CHECK(results[size_t(r)] != BAGUA_SUCCESS);
}
