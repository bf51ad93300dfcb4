// The environment table: parsing rules, and every variable documented in doc/.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/env.hpp"

TEST_CASE("env_int parses, range-checks and falls back to the default", "[env]") {
  int64_t v = 0;
  unsetenv("BAGUA_TIMEOUT_MS");
  REQUIRE(bagua::env_int("BAGUA_TIMEOUT_MS", 1, 1000000, &v) == BAGUA_SUCCESS);
  CHECK(v == 120000);
  setenv("BAGUA_TIMEOUT_MS", "250", 1);
  REQUIRE(bagua::env_int("BAGUA_TIMEOUT_MS", 1, 1000000, &v) == BAGUA_SUCCESS);
  CHECK(v == 250);
  for (const char *bad : {"12x", "-5", "99999999", "soon"}) {
    setenv("BAGUA_TIMEOUT_MS", bad, 1);
    CHECK(bagua::env_int("BAGUA_TIMEOUT_MS", 1, 1000000, &v) == BAGUA_ERR_INVALID_ARGUMENT);
    CHECK(std::string(bagua::last_error_message()).find("BAGUA_TIMEOUT_MS") != std::string::npos);
  }
  unsetenv("BAGUA_TIMEOUT_MS");
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
