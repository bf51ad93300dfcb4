// bagua-advise on real ranks: what can be checked without timings. Bytes per
// rank are the library's (bagua_allreduce_bytes, bagua_encoded_bytes), the
// recommendation is one of the rows, predictions are finite and positive,
// and bad arguments are refused naming the argument.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "advise/advise.hpp"
#include "helpers.hpp"

using namespace bagua;

namespace {

advise::Args parsed(std::initializer_list<const char *> words) {
  std::vector<const char *> argv = {"bagua-advise"};
  argv.insert(argv.end(), words);
  advise::Args a;
  REQUIRE(advise::parse_args(int(argv.size()), argv.data(), &a) == BAGUA_SUCCESS);
  return a;
}

void refused(std::initializer_list<const char *> words, const char *message) {
  std::vector<const char *> argv = {"bagua-advise"};
  argv.insert(argv.end(), words);
  advise::Args a;
  CHECK(advise::parse_args(int(argv.size()), argv.data(), &a) == BAGUA_ERR_INVALID_ARGUMENT);
  INFO(last_error_message());
  CHECK(std::string(last_error_message()).find(message) != std::string::npos);
}

// Rank 0's bytes (the model counts rank 0's; ranks differ by rounding).
MPI_Count library_bytes(bagua_algorithm algorithm, size_t count) {
  MPI_Count bytes = 0;
  REQUIRE(bagua_allreduce_bytes(algorithm, MPI_Count(count), MPI_FLOAT, MPI_COMM_WORLD, &bytes) ==
          BAGUA_SUCCESS);
  MPI_Bcast(&bytes, 1, MPI_COUNT, 0, MPI_COMM_WORLD);
  return bytes;
}

}  // namespace

TEST_CASE("advise: bad arguments are refused, naming the argument", "[advise]") {
  refused({}, "--model-bytes is required");
  refused({"--model-bytes", "12Q"}, "--model-bytes '12Q'");
  refused({"--model-bytes", "-4"}, "--model-bytes '-4'");
  refused({"--model-bytes"}, "--model-bytes needs a value");
  refused({"--model-bytes", "1M", "--ranks-per-node", "0"}, "--ranks-per-node '0'");
  refused({"--model-bytes", "1M", "--predict-ranks", "many"}, "--predict-ranks 'many'");
  refused({"--model-bytes", "1M", "--fast"}, "unknown option '--fast'");
  CHECK(parsed({"--model-bytes", "100M"}).model_bytes == 100u << 20);
  CHECK(parsed({"--model-bytes", "1K", "--predict-ranks", "128"}).predict_ranks == 128);
  advise::Measurement m;
  CHECK(advise::measure(MPI_COMM_WORLD, parsed({"--model-bytes", "1M", "--ranks-per-node", "999"}),
                        &m) == BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(std::string(last_error_message()).find("exceeds") != std::string::npos);
}

TEST_CASE("advise: bytes per rank are the library's; the recommendation is a listed row",
          "[advise]") {
  const advise::Args args = parsed({"--model-bytes", "4M", "--ranks-per-node", "1"});
  advise::Measurement m;
  REQUIRE(advise::measure(MPI_COMM_WORLD, args, &m) == BAGUA_SUCCESS);
  CHECK(m.params.ranks == test::world_size());
  CHECK(m.params.ranks_per_node == 1);
  CHECK(m.params.inter.latency_s > 0);
  CHECK(m.params.inter.bytes_per_s > 0);
  // A sustained rate is kept only where it is slower, and beyond some bytes.
  for (const LinkCost &link : {m.params.intra, m.params.inter})
    if (link.slows_down())
      CHECK((link.sustained_bytes_per_s < link.bytes_per_s && link.sustained_after_bytes > 0));
  // The call checks are on by default (BAGUA_CHECK_CALLS), so they take time.
  CHECK((std::isfinite(m.params.call_check_step_s) && m.params.call_check_step_s > 0));
  CHECK((std::isfinite(m.params.peer_check_s) && m.params.peer_check_s > 0));
  // The transfer's CPU beside compute: a delay per message, never negative.
  CHECK((std::isfinite(m.params.transfer_cpu_message_s) && m.params.transfer_cpu_message_s >= 0));
  // On Linux the notes say how much of the CPU a hypervisor took: a percentage.
  bool have_steal = false;
  for (const std::string &note : m.notes) {
    double percent = -1;
    if (std::sscanf(note.c_str(), "steal: %lf%%", &percent) != 1) continue;
    have_steal = true;
    CHECK((percent >= 0 && percent <= 100));
  }
  CHECK(have_steal);
  // The overlap is a fraction hidden, or added where compute and transfer
  // slow each other (the library's q8 allreduce against the model).
  for (const OverlapPoint &point : m.params.overlap_at) {
    CHECK((point.overlap >= -1 && point.overlap <= 1));
    CHECK((point.balance >= 0 && point.balance <= 1));
  }
  // Every codec the rows use has its three pass rates measured.
  for (const AlgorithmRow &row : algorithm_rows()) {
    if (row.wire == Wire::exact) continue;
    const CodecRate &rate = m.params.codec[size_t(row.wire)];
    for (double r : {rate.encode_bytes_per_s, rate.accumulate_bytes_per_s, rate.decode_bytes_per_s})
      CHECK((std::isfinite(r) && r > 0));
  }
  const advise::Advice a = advise::advise(m.params, args.model_bytes);
  const size_t count = args.model_bytes / 4;
  REQUIRE(a.recommended < a.rows.size());
  REQUIRE(a.recommended_averaging < a.rows.size());
  CHECK_FALSE(is_averaging(a.rows[a.recommended].algorithm));
  CHECK(is_averaging(a.rows[a.recommended_averaging].algorithm));
  MPI_Count q8_message = 0;
  REQUIRE(bagua_encoded_bytes(BAGUA_ALGORITHM_Q8, MPI_Count(count), MPI_FLOAT, &q8_message) ==
          BAGUA_SUCCESS);
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const std::string name = a.rows[i].name;
    const Estimate &e = a.estimates[i];
    INFO(name);
    CHECK(std::isfinite(e.seconds));
    CHECK(e.seconds > 0);
    CHECK_FALSE(e.formula.empty());
    if (name == "ring" || name == "decentralized_all")  // 4 MiB: the policy runs the ring
      CHECK(MPI_Count(e.bytes_per_rank) == library_bytes(BAGUA_ALGORITHM_EXACT, count));
    if (name == "q8")
      CHECK(MPI_Count(e.bytes_per_rank) == library_bytes(BAGUA_ALGORITHM_Q8, count));
    if (name == "fp16")
      CHECK(MPI_Count(e.bytes_per_rank) == library_bytes(BAGUA_ALGORITHM_FP16, count));
    if (name == "sign")
      CHECK(MPI_Count(e.bytes_per_rank) == library_bytes(BAGUA_ALGORITHM_SIGN, count));
    if (name == "lowprec_ring") CHECK(MPI_Count(e.bytes_per_rank) == 2 * q8_message);
  }
  // Extrapolation: the same parameters at 128 ranks send the ring's 2(n-1)/n.
  CostParams big = m.params;
  big.ranks = 128;
  const advise::Advice b = advise::advise(big, args.model_bytes);
  CHECK(b.rows[0].algorithm == Algorithm::exact_ring);
  CHECK(b.estimates[0].bytes_per_rank >= size_t(4.0 * count * 2 * 127 / 128));
}
