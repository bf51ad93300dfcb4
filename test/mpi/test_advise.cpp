// bagua-advise on real ranks: what can be checked without timings. Bytes per
// rank are the library's (bagua_allreduce_bytes, bagua_encoded_bytes), the
// recommendation is one of the rows, predictions are finite and positive,
// and bad arguments are refused naming the argument.
#include <algorithm>
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

// The index of the row named `name` in algorithm_rows().
size_t row_index(const std::string &name) {
  const std::vector<AlgorithmRow> &rows = algorithm_rows();
  for (size_t i = 0; i < rows.size(); ++i)
    if (name == rows[i].name) return i;
  FAIL("no row " << name);
  return 0;
}

// Advice whose predictions are `ms` by row name, every other row 1 s.
advise::Advice advice_predicting(const std::vector<std::pair<std::string, double>> &ms) {
  advise::Advice a;
  a.rows = algorithm_rows();
  a.estimates.resize(a.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    a.estimates[i].seconds = 1;
    if (!is_averaging(a.rows[i].algorithm)) a.reduce.push_back(i);
  }
  for (const auto &[name, t] : ms) a.estimates[row_index(name)].seconds = t / 1e3;
  a.fastest = fastest(seconds_of(a.estimates), a.reduce);
  return a;
}

std::vector<std::string> names(const std::vector<size_t> &rows) {
  std::vector<std::string> out;
  for (size_t i : rows) out.push_back(algorithm_rows()[i].name);
  return out;
}

}  // namespace

TEST_CASE("advise: the race takes the flat allreduce rows within 25% of the fastest", "[advise]") {
  using Names = std::vector<std::string>;
  // q4 and sign within 25% (sign 20 ms, q4 24.9): both, in the rows' order.
  CHECK(names(advise::race_candidates(advice_predicting({{"q4", 24.9}, {"sign", 20}}))) ==
        Names{"sign", "q4"});
  // q4 at 25.1 ms is more than 25% slower: sign alone, no race.
  CHECK(advise::race_candidates(advice_predicting({{"q4", 25.1}, {"sign", 20}})).empty());
  // A hierarchical row among the close ones: no race (it does not run flat).
  CHECK(advise::race_candidates(
            advice_predicting({{"q8_hierarchical", 21}, {"q4", 24}, {"sign", 20}}))
            .empty());
  // Exact schedules race as well.
  CHECK(names(advise::race_candidates(
            advice_predicting({{"ring", 10}, {"recursive_doubling", 11}, {"q8", 13}}))) ==
        Names{"ring", "recursive_doubling"});
}

TEST_CASE("advise: the raced times decide the recommended allreduce", "[advise]") {
  CostParams p = default_cost_params();
  p.ranks = test::world_size();
  const advise::Advice model = advise::advise(p, 64 << 20);
  // Race the model's recommendation against the slowest flat codec row, and
  // make the slower one by the model measure faster by more than 5%.
  const size_t predicted = model.model_recommended;
  size_t other = predicted;
  for (size_t i : model.reduce)
    if (model.rows[i].algorithm == Algorithm::bytegrad &&
        model.estimates[i].seconds > model.estimates[other].seconds)
      other = i;
  REQUIRE(other != predicted);
  std::vector<double> raced(model.rows.size(), 0);
  raced[predicted] = 0.010;
  raced[other] = 0.009;
  const advise::Advice a = advise::advise(p, 64 << 20, raced);
  CHECK(a.model_recommended == predicted);
  CHECK(a.recommended == other);
  // Within 5% of each other, the more precise wire of the two.
  raced[other] = 0.0099;
  const size_t precise = advise::advise(p, 64 << 20, raced).recommended;
  CHECK((precise == predicted || precise == other));
  CHECK(precise == recommend(model.rows, raced, {predicted, other}));
}

TEST_CASE("advise: race_rows times the rows given, and refuses others", "[advise]") {
  std::vector<double> raced;
  const std::vector<size_t> rows = {row_index("ring"), row_index("q8"), row_index("sign")};
  REQUIRE(advise::race_rows(MPI_COMM_WORLD, rows, 1 << 18, 3, &raced) == BAGUA_SUCCESS);
  REQUIRE(raced.size() == algorithm_rows().size());
  for (size_t i = 0; i < raced.size(); ++i) {
    INFO(algorithm_rows()[i].name);
    const bool in_race = std::find(rows.begin(), rows.end(), i) != rows.end();
    CHECK((in_race ? std::isfinite(raced[i]) && raced[i] > 0 : raced[i] == 0));
  }
  CHECK(advise::race_rows(MPI_COMM_WORLD, {row_index("decentralized_ring")}, 1024, 3, &raced) ==
        BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(std::string(last_error_message()).find("not a flat allreduce") != std::string::npos);
  CHECK(advise::race_rows(MPI_COMM_WORLD, {row_index("q8")}, 1024, 0, &raced) ==
        BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(advise::race_rows(MPI_COMM_WORLD, {row_index("q8")}, 0, 3, &raced) ==
        BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(advise::race_rows(MPI_COMM_WORLD, {}, 1024, 3, &raced) == BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(std::string(last_error_message()).find("at least one row") != std::string::npos);
  CHECK(advise::race_rows(MPI_COMM_WORLD, {algorithm_rows().size()}, 1024, 3, &raced) ==
        BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(std::string(last_error_message()).find("not a flat allreduce") != std::string::npos);
}

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
  refused({"--model-bytes", "1M", "--race-seconds", "-1"}, "--race-seconds '-1'");
  refused({"--model-bytes", "1M", "--race-seconds", "nan"}, "--race-seconds 'nan'");
  refused({"--model-bytes", "1M", "--race-seconds", "2s"}, "--race-seconds '2s'");
  CHECK(parsed({"--model-bytes", "1M"}).race_seconds == 2);
  CHECK(parsed({"--model-bytes", "1M", "--race-seconds", "0.5"}).race_seconds == 0.5);
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
  // The race ran on two rows or more, or a note says why not; the
  // recommendation is a raced row when there was one.
  const advise::Advice a = advise::advise(m.params, args.model_bytes, m.raced);
  const auto race_note = std::find_if(m.notes.begin(), m.notes.end(), [](const std::string &n) {
    return n.rfind("race: ", 0) == 0;
  });
  REQUIRE(race_note != m.notes.end());
  const size_t raced_rows =
      size_t(std::count_if(m.raced.begin(), m.raced.end(), [](double t) { return t > 0; }));
  const size_t candidates =
      advise::race_candidates(advise::advise(m.params, args.model_bytes)).size();
  INFO(*race_note);
  if (raced_rows > 0) {
    CHECK(raced_rows == candidates);
    CHECK(m.raced[a.recommended] > 0);
  } else {
    CHECK(race_note->find(candidates > 0 ? "skipped" : "none") != std::string::npos);
  }
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
