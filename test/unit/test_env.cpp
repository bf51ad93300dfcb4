// The environment table: parsing rules, and every variable documented in doc/.
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "base/env.hpp"
#include "core/options.hpp"

TEST_CASE("env_int parses, range-checks with the table's range and falls back to the default",
          "[env]") {
  int64_t v = 0;
  unsetenv("BAGUA_MAX_IN_FLIGHT");
  REQUIRE(bagua::env_int("BAGUA_MAX_IN_FLIGHT", &v) == BAGUA_SUCCESS);
  CHECK(v == bagua::env_default_int("BAGUA_MAX_IN_FLIGHT"));
  CHECK(v == std::stoll(bagua::env_default("BAGUA_MAX_IN_FLIGHT")));
  setenv("BAGUA_MAX_IN_FLIGHT", "250", 1);
  REQUIRE(bagua::env_int("BAGUA_MAX_IN_FLIGHT", &v) == BAGUA_SUCCESS);
  CHECK(v == 250);
  for (const char *bad : {"12x", "-5", "0", "1025", "soon"}) {
    setenv("BAGUA_MAX_IN_FLIGHT", bad, 1);
    CHECK(bagua::env_int("BAGUA_MAX_IN_FLIGHT", &v) == BAGUA_ERR_INVALID_ARGUMENT);
    const std::string message = bagua::last_error_message();
    CHECK(message.find("BAGUA_MAX_IN_FLIGHT") != std::string::npos);
    CHECK(message.find("[1, 1024]") != std::string::npos);
  }
  unsetenv("BAGUA_MAX_IN_FLIGHT");
  // A setting without a range is not read as an integer.
  CHECK(bagua::env_int("BAGUA_TRANSPORT", &v) == BAGUA_ERR_INTERNAL);
}

TEST_CASE("every integer setting's default lies in its range", "[env]") {
  for (const bagua::EnvVar &v : bagua::env_vars()) {
    if (!v.range.integer()) continue;
    INFO(v.name << " default " << v.default_value);
    // BAGUA_MPI_PIECE_BYTES: auto, or an integer in its range.
    if (std::string(v.default_value) == "auto") continue;
    const int64_t value = std::stoll(v.default_value);
    CHECK(std::to_string(value) == v.default_value);
    CHECK(value >= v.range.lo);
    CHECK(value <= v.range.hi);
    CHECK(bagua::env_default_int(v.name) == value);
  }
}

TEST_CASE("the defaults doc/ lists are the table's", "[env][doc]") {
  // Rows "| `NAME` | default | ..." of the settings tables.
  const std::regex row(R"(^\| `(BAGUA_[A-Z0-9_]+)` \| ([^|]*) \|)");
  int rows = 0;
  for (const auto &entry : std::filesystem::directory_iterator(BAGUA_DOC_DIR)) {
    if (entry.path().extension() != ".md") continue;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, row)) continue;
      const std::string name = m[1];
      const auto var = std::find_if(bagua::env_vars().begin(), bagua::env_vars().end(),
                                    [&](const bagua::EnvVar &v) { return name == v.name; });
      if (var == bagua::env_vars().end()) continue;  // an error code or an enum value
      std::string cell = m[2];
      std::erase(cell, '`');
      INFO(entry.path().filename().string() << ": " << line);
      const std::string want = var->default_value;
      const std::string first = cell.substr(0, cell.find(' '));
      if (want.empty())
        CHECK((first == "empty" || first == "unset"));
      else
        CHECK(first == want);
      ++rows;
    }
  }
  CHECK(rows >= 30);
}

TEST_CASE("env_choice accepts only the listed words", "[env]") {
  static constexpr const char *kChoices[] = {"mpi", "ucx"};
  int choice = -1;
  setenv("BAGUA_TRANSPORT", "ucx", 1);
  REQUIRE(bagua::env_choice("BAGUA_TRANSPORT", kChoices, &choice) == BAGUA_SUCCESS);
  CHECK(choice == 1);
  setenv("BAGUA_TRANSPORT", "verbs", 1);
  CHECK(bagua::env_choice("BAGUA_TRANSPORT", kChoices, &choice) == BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(std::string(bagua::last_error_message()).find("mpi, ucx") != std::string::npos);
  unsetenv("BAGUA_TRANSPORT");
}

TEST_CASE("every environment variable is documented in doc/", "[env][doc]") {
  std::string docs;
  for (const auto &entry : std::filesystem::directory_iterator(BAGUA_DOC_DIR)) {
    if (entry.path().extension() != ".md") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    docs += text.str();
  }
  REQUIRE(!docs.empty());
  for (const bagua::EnvVar &v : bagua::env_vars()) {
    INFO(v.name << " (default " << v.default_value << ")");
    CHECK(docs.find(std::string("`") + v.name + "`") != std::string::npos);
    CHECK(std::string(v.description).size() > 10);
  }
}

TEST_CASE("a setting's earlier name is read when the setting is not set", "[env]") {
  unsetenv("BAGUA_ALLREDUCE_SCHEDULE");
  setenv("BAGUA_ALLREDUCE_ALGO", "rd", 1);
  CHECK(bagua::env_string("BAGUA_ALLREDUCE_SCHEDULE") == "rd");
  setenv("BAGUA_ALLREDUCE_SCHEDULE", "ring", 1);
  CHECK(bagua::env_string("BAGUA_ALLREDUCE_SCHEDULE") == "ring");  // the name wins
  unsetenv("BAGUA_ALLREDUCE_SCHEDULE");
  unsetenv("BAGUA_ALLREDUCE_ALGO");
  CHECK(bagua::env_string("BAGUA_ALLREDUCE_SCHEDULE") == "auto");
}

TEST_CASE("a default-constructed Options is what the environment's defaults load to", "[env]") {
  for (const bagua::EnvVar &v : bagua::env_vars()) {
    unsetenv(v.name);
    if (v.alias != nullptr) unsetenv(v.alias);
  }
  bagua::Options loaded;
  loaded.timeout_ms = 1;  // overwritten by the load
  REQUIRE(bagua::options_load(&loaded) == BAGUA_SUCCESS);
  CHECK(loaded == bagua::Options{});
  setenv("BAGUA_PARTIAL_DEADLINE_MS", "11", 1);
  REQUIRE(bagua::options_load(&loaded) == BAGUA_SUCCESS);
  CHECK(loaded.partial.deadline_ms == 11);
  CHECK_FALSE(loaded == bagua::Options{});
  unsetenv("BAGUA_PARTIAL_DEADLINE_MS");
}
