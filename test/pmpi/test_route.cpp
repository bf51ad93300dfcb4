// The interposer's routing rule, settings and summary, without MPI.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "base/env.hpp"
#include "route.hpp"
#include "settings.hpp"
#include "stats.hpp"

using namespace bagua::pmpi;

namespace {

Policy policy(Mode mode, int64_t min_count = 100, bool nonblocking = true) {
  return {mode, min_count, nonblocking};
}

CallShape shape(TypeClass type, OpClass op, int64_t count = 1000, CommKind comm = CommKind::intra,
                CallKind call = CallKind::blocking) {
  return {type, op, count, comm, call};
}

std::map<std::string, std::string> g_env;
const char *fake_getenv(const char *name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

constexpr Mode kExact = mode_of(BAGUA_ALGORITHM_EXACT), kQ8 = mode_of(BAGUA_ALGORITHM_Q8),
               kQ4 = mode_of(BAGUA_ALGORITHM_Q4), kFp16 = mode_of(BAGUA_ALGORITHM_FP16),
               kBf16 = mode_of(BAGUA_ALGORITHM_BF16), kSign = mode_of(BAGUA_ALGORITHM_SIGN),
               kMxfp8 = mode_of(BAGUA_ALGORITHM_MXFP8);

}  // namespace

TEST_CASE("off passes every call through", "[pmpi]") {
  CHECK(route(policy(Mode::off), shape(TypeClass::float32, OpClass::sum)) == Route::pass_off);
}

TEST_CASE("exact routes float and double with sum, max and min", "[pmpi]") {
  for (TypeClass type : {TypeClass::float32, TypeClass::float64})
    for (OpClass op : {OpClass::sum, OpClass::max, OpClass::min})
      CHECK(route(policy(kExact), shape(type, op)) == Route::bagua);
  CHECK(route(policy(kExact), shape(TypeClass::other, OpClass::sum)) == Route::pass_type);
  CHECK(route(policy(kExact), shape(TypeClass::float32, OpClass::other)) == Route::pass_op);
}

TEST_CASE("relaxed modes route float32 sums only", "[pmpi]") {
  for (Mode mode : {kQ8, kQ4, kFp16, kBf16, kSign, kMxfp8}) {
    INFO(mode_name(mode));
    CHECK(route(policy(mode), shape(TypeClass::float32, OpClass::sum)) == Route::bagua);
    CHECK(route(policy(mode), shape(TypeClass::float64, OpClass::sum)) == Route::pass_type);
    CHECK(route(policy(mode), shape(TypeClass::other, OpClass::sum)) == Route::pass_type);
    CHECK(route(policy(mode), shape(TypeClass::float32, OpClass::max)) == Route::pass_op);
    CHECK(route(policy(mode), shape(TypeClass::float32, OpClass::other)) == Route::pass_op);
  }
}

TEST_CASE("only intra-communicators of two or more ranks are routed", "[pmpi]") {
  for (CommKind comm : {CommKind::single_rank, CommKind::inter, CommKind::null})
    CHECK(route(policy(kExact), shape(TypeClass::float32, OpClass::sum, 1000, comm)) ==
          Route::pass_comm);
}

TEST_CASE("calls below the minimum count stay with MPI", "[pmpi]") {
  const Policy p = policy(kQ8, 100);
  CHECK(route(p, shape(TypeClass::float32, OpClass::sum, 99)) == Route::pass_small);
  CHECK(route(p, shape(TypeClass::float32, OpClass::sum, 100)) == Route::bagua);
  CHECK(route(policy(kExact, 0), shape(TypeClass::float32, OpClass::sum, 0)) == Route::pass_small);
}

TEST_CASE(
    "iallreduce is routed in the modes bagua_iallreduce_alg offers, when the thread level "
    "allows",
    "[pmpi]") {
  const CallShape nb =
      shape(TypeClass::float32, OpClass::sum, 1000, CommKind::intra, CallKind::nonblocking);
  CHECK(route(policy(kExact), nb) == Route::bagua);
  CHECK(route(policy(kQ8), nb) == Route::bagua);
  CHECK(route(policy(kQ4), nb) == Route::bagua);
  CHECK(route(policy(kFp16), nb) == Route::bagua);
  CHECK(route(policy(kMxfp8), nb) == Route::bagua);
  CHECK(route(policy(kSign), nb) == Route::pass_nonblocking);
  CHECK(route(policy(kExact, 100, false), nb) == Route::pass_nonblocking);
}

TEST_CASE("mode names round-trip", "[pmpi]") {
  for (Mode mode : {Mode::off, kExact, kQ8, kFp16, kBf16, kSign, kQ4, kMxfp8}) {
    Mode parsed = Mode::off;
    REQUIRE(parse_mode(mode_name(mode), &parsed));
    CHECK(parsed == mode);
  }
  Mode parsed = Mode::off;
  CHECK_FALSE(parse_mode("Q8", &parsed));
  CHECK_FALSE(parse_mode("", &parsed));
}

TEST_CASE("settings: defaults, values and malformed values", "[pmpi]") {
  Settings s;
  std::string error;
  g_env.clear();
  REQUIRE(parse_settings(fake_getenv, &s, &error));
  CHECK(s.mode == Mode::off);
  CHECK(s.min_count == kDefaultMinCount);
  CHECK_FALSE(s.verbose);
  CHECK(s.iallreduce);
  g_env = {{"BAGUA_PMPI", "q8"},
           {"BAGUA_PMPI_MIN_COUNT", "0"},
           {"BAGUA_PMPI_VERBOSE", "1"},
           {"BAGUA_PMPI_IALLREDUCE", "0"}};
  REQUIRE(parse_settings(fake_getenv, &s, &error));
  CHECK(s.mode == kQ8);
  CHECK(s.min_count == 0);
  CHECK(s.verbose);
  CHECK_FALSE(s.iallreduce);
  for (const auto &[name, value] :
       std::map<std::string, std::string>{{"BAGUA_PMPI", "int8"},
                                          {"BAGUA_PMPI_MIN_COUNT", "-1"},
                                          {"BAGUA_PMPI_MIN_COUNT", "4k"},
                                          {"BAGUA_PMPI_VERBOSE", "yes"},
                                          {"BAGUA_PMPI_IALLREDUCE", "2"}}) {
    g_env = {{name, value}};
    CHECK_FALSE(parse_settings(fake_getenv, &s, &error));
    CHECK(error.find(name + "='" + value + "'") != std::string::npos);
  }
}

TEST_CASE("the summary counts routed and passed calls", "[pmpi]") {
  Stats stats;
  stats.record(Route::bagua, 4 << 20, 0.5);
  stats.record(Route::pass_small, 8, 0.0);
  stats.record(Route::pass_type, 40, 0.0);
  stats.record_inner();
  const std::string line = stats.summary(3, policy(kQ8, 4096));
  CHECK(line ==
        "bagua-pmpi: rank 3: mode q8, min count 4096: routed 1 calls (4.0 MiB, 0.500 s); "
        "passed 2 calls (48 B, 0.000 s: small 1, type 1); bagua's own calls 1");
}

TEST_CASE("bagua-info's table lists the interposer's variables with its defaults", "[pmpi]") {
  const Settings defaults;
  const std::map<std::string, std::string> expected = {
      {"BAGUA_PMPI", mode_name(defaults.mode)},
      {"BAGUA_PMPI_MIN_COUNT", std::to_string(defaults.min_count)},
      {"BAGUA_PMPI_IALLREDUCE", defaults.iallreduce ? "1" : "0"},
      {"BAGUA_PMPI_VERBOSE", defaults.verbose ? "1" : "0"}};
  std::map<std::string, std::string> listed;
  for (const bagua::EnvVar &v : bagua::env_vars())
    if (std::string(v.name).starts_with("BAGUA_PMPI")) listed[v.name] = v.default_value;
  CHECK(listed == expected);
}
