// The cost model (bin/advise/cost_model.hpp) on synthetic parameters, against
// closed-form values of each algorithm's alpha-beta terms.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "../wire_ids.hpp"
#include "advise/cost_model.hpp"
#include "algo/compressed.hpp"
#include "base/env.hpp"
#include "codec.h"
#include "core/options.hpp"
#include "core/run.hpp"
#include "core/select.hpp"

using namespace bagua;

namespace {

constexpr size_t kCount = size_t(1) << 20;  // 4 MiB of float32
constexpr double kBytes = 4.0 * kCount;

// 4 hosts, 1 ms and 1 MB/s links, sums at 1 GB/s, codecs at 100 MB/s.
CostParams synthetic(int ranks = 4, int per_node = 1) {
  CostParams p;
  p.ranks = ranks;
  p.ranks_per_node = per_node;
  p.intra = {1e-5, 1e8};
  p.inter = {1e-3, 1e6};
  p.reduce_bytes_per_s = 1e9;
  for (CodecRate &r : p.codec) r = {1e8, 1e8, 1e8};
  return p;
}

const AlgorithmRow &row(const char *name) {
  for (const AlgorithmRow &r : algorithm_rows())
    if (std::string(r.name) == name) return r;
  FAIL("no row " << name);
  return algorithm_rows().front();
}

double q8_message(size_t count) { return double(codec::q8_encoded_bytes(count, 2048)); }

}  // namespace

TEST_CASE("ring: 2(n-1) steps of one chunk plus n-1 chunk reductions", "[cost]") {
  const Estimate e = predict(synthetic(), row("ring"), kCount);
  const double chunk = kBytes / 4;
  CHECK(e.transfer_s == Approx(6 * (1e-3 + chunk / 1e6)));
  CHECK(e.compute_s == Approx(3 * chunk / 1e9));
  CHECK(e.seconds == Approx(e.transfer_s + e.compute_s));
  CHECK(e.formula.find("2(n-1) steps") != std::string::npos);
}

TEST_CASE("recursive doubling: log2 n whole-buffer rounds, +2 steps to fold", "[cost]") {
  Estimate e = predict(synthetic(4), row("recursive_doubling"), kCount);
  CHECK(e.transfer_s == Approx(2 * (1e-3 + kBytes / 1e6)));
  CHECK(e.compute_s == Approx(2 * kBytes / 1e9));
  e = predict(synthetic(6), row("recursive_doubling"), kCount);  // p = 4: fold in and back
  CHECK(e.transfer_s == Approx(4 * (1e-3 + kBytes / 1e6)));
  CHECK(e.compute_s == Approx(3 * kBytes / 1e9));
}

TEST_CASE("ByteGrad: 2 all-to-alls; encode B, load B/n, accumulate (n-1)/n B, decode B", "[cost]") {
  const Estimate e = predict(synthetic(), row("q8"), kCount);
  const double message = q8_message(kCount / 4);
  CHECK(e.transfer_s == Approx(2 * (3 * 1e-3 + 3 * message / 1e6)));
  CHECK(e.compute_s ==
        Approx(kBytes / 1e8 + kBytes / 4 / 1e9 + kBytes * 3 / 4 / 1e8 + kBytes / 1e8));
  // Each pass at its own rate.
  CostParams p = synthetic();
  p.codec[size_t(wire::q8)] = {1e8, 2e8, 4e8};
  CHECK(predict(p, row("q8"), kCount).compute_s ==
        Approx(kBytes / 1e8 + kBytes / 4 / 1e9 + kBytes * 3 / 4 / 2e8 + kBytes / 4e8));
  // fp16 messages: half the float32 chunk and the cast header.
  const Estimate half = predict(synthetic(), row("fp16"), kCount);
  const double cast = double(codec::cast_encoded_bytes(kCount / 4));
  CHECK(cast > kBytes / 8);
  CHECK(half.transfer_s == Approx(2 * (3 * 1e-3 + 3 * cast / 1e6)));
}

TEST_CASE("the all-to-all efficiency (incast) divides the link rate", "[cost]") {
  CostParams p = synthetic();
  p.alltoall_efficiency = 0.5;
  const double message = q8_message(kCount / 4);
  CHECK(predict(p, row("q8"), kCount).transfer_s == Approx(2 * (3 * 1e-3 + 3 * message / 0.5e6)));
}

TEST_CASE("several ranks per node share its network interface", "[cost]") {
  // 8 ranks, 4 per node: each node's link carries 4 x 4 messages per phase.
  const Estimate e = predict(synthetic(8, 4), row("q8"), kCount);
  const double message = q8_message(kCount / 8);
  CHECK(e.transfer_s == Approx(2 * (7 * 1e-3 + 16 * message / 1e6)));
}

TEST_CASE("a link's bytes beyond its first move at the sustained rate", "[cost]") {
  const LinkCost steady{1e-3, 1e6};
  CHECK_FALSE(steady.slows_down());
  CHECK(steady.seconds(4e6, 3) == Approx(3e-3 + 4.0));
  const LinkCost slowing{1e-3, 1e6, 2e6, 5e5};
  REQUIRE(slowing.slows_down());
  CHECK(slowing.transfer_seconds(1e6) == Approx(1.0));
  CHECK(slowing.transfer_seconds(2e6) == Approx(2.0));
  CHECK(slowing.seconds(4e6, 3) == Approx(3e-3 + 2.0 + 2e6 / 5e5));
}

TEST_CASE("the ring's steps are one transfer; each all-to-all phase is its own", "[cost]") {
  // 2 MiB at 1 MB/s, then 0.5 MB/s: the ring sends 6 chunks of 1 MiB back
  // to back, a q8 phase 3 messages of about 0.26 MiB.
  CostParams p = synthetic();
  p.inter = {1e-3, 1e6, 2.0 * (1 << 20), 5e5};
  const double chunk = kBytes / 4;
  CHECK(predict(p, row("ring"), kCount).transfer_s ==
        Approx(6 * 1e-3 + 2 * chunk / 1e6 + 4 * chunk / 5e5));
  const double message = q8_message(kCount / 4);
  REQUIRE(3 * message < 2.0 * (1 << 20));
  CHECK(predict(p, row("q8"), kCount).transfer_s == Approx(2 * (3 * 1e-3 + 3 * message / 1e6)));
  // Two whole buffers to the neighbours: the second at the sustained rate.
  CHECK(predict(p, row("decentralized_ring"), kCount).transfer_s ==
        Approx(2 * 1e-3 + 2 * chunk / 1e6 + (2 * kBytes - 2 * chunk) / 5e5));
}

TEST_CASE("hierarchical: node reduce and broadcast, ByteGrad among the leaders", "[cost]") {
  const Estimate e = predict(synthetic(8, 4), row("q8_hierarchical"), kCount);
  const double node = 2 * (1e-5 + 3 * kBytes / 1e8) + 3 * kBytes / 1e9;
  const double message = q8_message(kCount / 2);
  const double leaders = 2 * (1e-3 + message / 1e6) + kBytes / 1e8 + kBytes / 2 / 1e9 +
                         kBytes / 2 / 1e8 + kBytes / 1e8;
  CHECK(e.seconds == Approx(node + leaders));
}

TEST_CASE("peer averaging: one or two whole-buffer messages over the own link", "[cost]") {
  CHECK(predict(synthetic(), row("decentralized_shift_one"), kCount).transfer_s ==
        Approx(1e-3 + kBytes / 1e6));
  const Estimate ring = predict(synthetic(), row("decentralized_ring"), kCount);
  CHECK(ring.transfer_s == Approx(2 * (1e-3 + kBytes / 1e6)));
  CHECK(ring.bytes_per_rank == size_t(2 * kBytes));
  const Estimate low = predict(synthetic(), row("lowprec_ring"), kCount);
  CHECK(low.transfer_s == Approx(2 * (1e-3 + q8_message(kCount) / 1e6)));
  CHECK(low.bytes_per_rank == 2 * size_t(q8_message(kCount)));
}

// One overlap for every step: both points read `overlap`.
void set_overlap(CostParams &p, double overlap) {
  p.overlap_at = {{{0.5, overlap}, {0.5, overlap}}};
}

TEST_CASE("overlap hides its fraction of the shorter of transfer and compute", "[cost]") {
  CostParams p = synthetic();
  set_overlap(p, 0.5);
  const Estimate e = predict(p, row("q8"), kCount);
  REQUIRE(e.compute_s < e.transfer_s);
  CHECK(e.seconds == Approx(e.transfer_s + 0.5 * e.compute_s));
  CHECK(e.formula.find("overlap 0.50 of min(transfer, compute) hidden (balance") !=
        std::string::npos);
}

TEST_CASE("the overlap between two balances is interpolated, beyond them the nearer one's",
          "[cost]") {
  CostParams p = synthetic();
  p.overlap_at = {{{0.8, -0.2}, {0.2, 0.6}}};  // either order
  CHECK(balance_of(3, 1) == Approx(0.25));
  CHECK(p.overlap(0.9, 0.1) == Approx(0.6));    // balance 0.1, below both
  CHECK(p.overlap(0.8, 0.2) == Approx(0.6));    // at the lower point
  CHECK(p.overlap(0.5, 0.5) == Approx(0.2));    // halfway
  CHECK(p.overlap(0.35, 0.65) == Approx(0.0));  // three quarters of the way
  CHECK(p.overlap(0.1, 0.9) == Approx(-0.2));   // above both
  // Fast links and slow codecs: sign's compute is longer than its transfer.
  p.inter = {1e-5, 1e9};
  const Estimate e = predict(p, row("sign"), kCount);
  REQUIRE(e.compute_s > e.transfer_s);
  const double overlap = p.overlap(e.transfer_s, e.compute_s);
  CHECK(e.seconds == Approx(e.compute_s + (1 - overlap) * e.transfer_s));
}

TEST_CASE("a negative overlap adds its fraction of the shorter of transfer and compute", "[cost]") {
  CostParams p = synthetic();
  set_overlap(p, -0.5);
  const Estimate e = predict(p, row("q8"), kCount);
  REQUIRE(e.compute_s < e.transfer_s);
  CHECK(e.seconds == Approx(e.transfer_s + 1.5 * e.compute_s));
  CHECK(e.formula.find("contention 0.50") != std::string::npos);
}

TEST_CASE("a transfer's CPU adds to compute where compute outlasts the transfer", "[cost]") {
  // Fast links and slow codecs: sign's compute is longer than its transfer.
  CostParams p = synthetic();
  p.inter = {1e-5, 1e9};
  set_overlap(p, 1);
  const Estimate hidden = predict(p, row("sign"), kCount);
  REQUIRE(hidden.compute_s > hidden.transfer_s);
  CHECK(hidden.seconds == Approx(hidden.compute_s));  // all of the transfer hidden
  // ByteGrad's messages: 2 phases x the segment rounds x (n-1) peers.
  Options sizing;
  sizing.segment_bytes = p.segment_bytes;
  sizing.compressed.set_setting_blocks(uint32_t(p.codec_block));
  const double rounds = double(bytegrad_rounds(float_call(wire::sign, kCount), 4, sizing));
  CHECK(hidden.messages_per_rank == Approx(2 * rounds * 3));
  p.transfer_cpu_message_s = 1e-5;
  const Estimate bound = predict(p, row("sign"), kCount);
  const double cpu = 1e-5 * bound.messages_per_rank;
  REQUIRE(cpu < bound.transfer_s);
  CHECK(bound.seconds == Approx(bound.compute_s + cpu));
  CHECK(bound.formula.find("CPU-bound") != std::string::npos);
  // At most the whole transfer: compute and transfer, none of it hidden.
  p.transfer_cpu_message_s = 1;
  const Estimate serial = predict(p, row("sign"), kCount);
  CHECK(serial.seconds == Approx(serial.compute_s + serial.transfer_s));
  // Where the transfer outlasts compute, the overlapped sum stays.
  p.inter = {1e-3, 1e6};
  p.transfer_cpu_message_s = 1e-5;
  const Estimate slow = predict(p, row("q8"), kCount);
  REQUIRE(slow.transfer_s > slow.compute_s + 1e-5 * slow.messages_per_rank);
  CHECK(slow.seconds == Approx(slow.transfer_s));
  CHECK(slow.formula.find("CPU-bound") == std::string::npos);
}

TEST_CASE("messages per rank: the ring's segments, one or two peer messages", "[cost]") {
  CostParams p = synthetic();
  p.segment_bytes = size_t(1) << 18;  // a chunk of 1 MiB is 4 segments
  CHECK(predict(p, row("ring"), kCount).messages_per_rank == 2 * 3 * 4);
  CHECK(predict(p, row("recursive_doubling"), kCount).messages_per_rank == 2);
  CHECK(predict(p, row("decentralized_shift_one"), kCount).messages_per_rank == 1);
  CHECK(predict(p, row("decentralized_ring"), kCount).messages_per_rank == 2);
  CHECK(predict(p, row("lowprec_ring"), kCount).messages_per_rank == 2);
}

TEST_CASE("the recommendation: the most precise wire within 5% of the fastest", "[cost]") {
  const std::vector<AlgorithmRow> rows = {row("ring"), row("recursive_doubling"), row("q8"),
                                          row("q4"), row("sign")};
  const auto recommended = [&](const std::vector<double> &seconds) {
    return std::string(rows[recommend(rows, seconds, {0, 1, 2, 3, 4})].name);
  };
  // sign is fastest by 2%: q4 is the same speed with less error.
  CHECK(recommended({10, 10, 9, 8.67, 8.5}) == "q4");
  // sign is fastest by 6%: it wins.
  CHECK(recommended({10, 10, 9, 9.01, 8.5}) == "sign");
  // Within 5% of the fastest, exact wins over any codec.
  CHECK(recommended({8.9, 9.5, 8.7, 8.6, 8.5}) == "ring");
  // Of the same precision, the faster.
  CHECK(recommended({8.9, 8.8, 9, 9, 9}) == "recursive_doubling");
  // Only the candidates count.
  std::vector<Estimate> estimates(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) estimates[i].seconds = 1.0 + 0.01 * double(i);
  CHECK(recommend(rows, seconds_of(estimates), {2, 4}) == 2);
  CHECK(recommend(rows, seconds_of(estimates), {4}) == 4);
}

TEST_CASE("one rank sends nothing and takes no time", "[cost]") {
  for (const AlgorithmRow &r : algorithm_rows()) {
    const Estimate e = predict(synthetic(1), r, kCount);
    CHECK(e.seconds == 0);
    CHECK(e.bytes_per_rank == 0);
  }
}

TEST_CASE("ring crossover: 4 alpha = B (0.5 / bw + 1.25 / R) at 4 ranks", "[cost]") {
  CostParams p = synthetic();
  p.inter = {1e-5, 1e8};
  const double closed_form = 4 * 1e-5 / (0.5 / 1e8 + 1.25 / 1e9);
  const size_t crossover = ring_crossover_bytes(p);
  CHECK(double(crossover) >= closed_form - 4);
  CHECK(double(crossover) <= closed_form + 8);
  // 2 ranks: the ring saves half the reduction, alpha more: B = 2 alpha R.
  p.ranks = 2;
  CHECK(double(ring_crossover_bytes(p)) == Approx(2 * 1e-5 * 1e9).epsilon(1e-3));
}

TEST_CASE("the policy's default ring threshold is the model's crossover at the defaults",
          "[cost][policy]") {
  // 4 ranks, 8 us, 4 GB/s links and sums: 4 alpha / (1.75 / 4 GB/s) = 73143 bytes.
  const size_t crossover = ring_crossover_bytes(default_cost_params());
  CHECK(crossover >= 73142);
  CHECK(crossover <= 73152);
  CHECK(ring_threshold_at_defaults() == 65536);
  // The library's defaults, all from the settings table, are the model's.
  CHECK(SelectionSettings{}.ring_threshold_bytes == ring_threshold_at_defaults());
  CHECK(Options{}.ring_threshold_bytes == ring_threshold_at_defaults());
  CHECK(default_cost_params().ring_threshold_bytes == ring_threshold_at_defaults());
}

TEST_CASE("bytes per rank are the library's: ring and ByteGrad match the policy's", "[cost]") {
  const CostParams p = synthetic();
  // Ring: 2(n-1)/n of the buffer, plus the 16-byte call check in 2 rounds.
  CHECK(predict(p, row("ring"), kCount).bytes_per_rank == size_t(kBytes * 6 / 4) + 2 * 16);
  CHECK(predict(p, row("q8"), kCount).bytes_per_rank ==
        6 * size_t(q8_message(kCount / 4)) + 2 * 16);
}

TEST_CASE(
    "ByteGrad's segment rounds cost the measured all-to-all round when it exceeds n-1 latencies",
    "[cost]") {
  CostParams p = synthetic();
  // 4 MiB at 4 ranks: chunks of 2^18 elements, 8 segments of 2^15 each.
  REQUIRE(bytegrad_rounds(float_call(wire::q8, kCount), 4, Options{}) == 8);
  const double message = q8_message(kCount / 4);
  p.alltoall_round_s = 1e-4;  // 8 rounds: 0.8 ms < 3 latencies of 1 ms
  CHECK(predict(p, row("q8"), kCount).transfer_s == Approx(2 * (3 * 1e-3 + 3 * message / 1e6)));
  p.alltoall_round_s = 1e-3;  // 8 ms > 3 ms
  CHECK(predict(p, row("q8"), kCount).transfer_s == Approx(2 * (8 * 1e-3 + 3 * message / 1e6)));
}

TEST_CASE(
    "ByteGrad's messages are at least 16 KiB where the chunk allows: sign cuts fewer segments",
    "[cost]") {
  const auto q8 = make_host_codec(wire_info(wire::q8), {codec::kDefaultQ8Block});
  std::vector<float> residual(kCount);
  CodecSetup sign_setup{codec::kDefaultQ8Block};
  sign_setup.residual[0] = sign_setup.residual[1] = residual.data();
  const auto sign = make_host_codec(wire_info(wire::sign), sign_setup);
  for (int ranks : {4, 8}) {
    // q8 keeps 8 segments of 64 KiB of float32 per chunk; sign (1 bit per
    // element) would send 2-4 KiB messages that way.
    CHECK(bytegrad_segment_rounds(*q8, kCount, ranks, 1 << 20) == 8);
    const size_t elems = bytegrad_segment_elems(*sign, kCount, ranks, 1 << 20);
    CHECK(sign->encoded_bytes(elems) >= 16384);
    CHECK(sign->encoded_bytes(elems) < 16384 + 1024);
    CHECK(bytegrad_segment_rounds(*sign, kCount, ranks, 1 << 20) < 8);
  }
  // BAGUA_SEGMENT_BYTES still caps a segment.
  CHECK(bytegrad_segment_elems(*sign, kCount, 8, 64 << 10) == 16384);
}

TEST_CASE("recursive doubling steps: log2 p, and 2 more to fold the ranks above p", "[cost]") {
  CHECK(recursive_doubling_steps(1) == 0);
  CHECK(recursive_doubling_steps(2) == 1);
  CHECK(recursive_doubling_steps(4) == 2);
  CHECK(recursive_doubling_steps(6) == 4);
  CHECK(recursive_doubling_steps(8) == 3);
  CHECK(recursive_doubling_steps(128) == 7);
}

TEST_CASE("the call check: its steps among all ranks, or one exchange with the peers", "[cost]") {
  CostParams p = synthetic(6);
  const double ring_unchecked = predict(p, row("ring"), kCount).seconds;
  const double shift_unchecked = predict(p, row("decentralized_shift_one"), kCount).seconds;
  p.call_check_step_s = 1e-4;
  p.peer_check_s = 3e-4;
  // 6 ranks: 2 steps among 4, and 2 to fold.
  const Estimate ring = predict(p, row("ring"), kCount);
  CHECK(ring.seconds == Approx(ring_unchecked + 4e-4));
  CHECK(ring.formula.find("call check 400.0us") != std::string::npos);
  CHECK(predict(p, row("q8"), kCount).seconds ==
        Approx(predict(synthetic(6), row("q8"), kCount).seconds + 4e-4));
  CHECK(predict(p, row("decentralized_shift_one"), kCount).seconds ==
        Approx(shift_unchecked + 3e-4));
  // Extrapolated to 128 ranks: 7 steps.
  p.ranks = 128;
  CostParams unchecked = synthetic(128);
  CHECK(predict(p, row("q8"), kCount).seconds ==
        Approx(predict(unchecked, row("q8"), kCount).seconds + 7e-4));
}
