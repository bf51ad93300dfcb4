// The interposer's settings: BAGUA_PMPI* environment variables (defaults and
// meanings in doc/pmpi.md; listed by bagua-info).
#pragma once

#include <cstdint>
#include <string>

#include "route.hpp"

namespace bagua::pmpi {

// Defaults of the variables (doc/pmpi.md says how MIN_COUNT was measured).
inline constexpr int64_t kDefaultMinCount = 16384;

struct Settings {
  Mode mode = Mode::off;                 // BAGUA_PMPI
  int64_t min_count = kDefaultMinCount;  // BAGUA_PMPI_MIN_COUNT
  bool verbose = false;                  // BAGUA_PMPI_VERBOSE
  bool iallreduce = true;                // BAGUA_PMPI_IALLREDUCE
};

// Reads the settings through `getenv_fn` (std::getenv in the library; a map in
// tests). On a malformed value returns false and a message naming the
// variable and the accepted values in *error.
bool parse_settings(const char *(*getenv_fn)(const char *), Settings *out, std::string *error);

}  // namespace bagua::pmpi
