#include "settings.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

namespace bagua::pmpi {
namespace {

bool parse_count(const char *text, int64_t *out) {
  char *end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < 0 || value > INT32_MAX) return false;
  *out = value;
  return true;
}

bool parse_flag(const char *text, bool *out) {
  const std::string_view v(text);
  if (v != "0" && v != "1") return false;
  *out = v == "1";
  return true;
}

std::string bad_value(const char *name, const char *value, const char *accepted) {
  return std::string(name) + "='" + value + "' is not " + accepted;
}

// "off, exact, q8, ...": every mode, from bagua's list of algorithms.
std::string mode_names() {
  std::string names = "off";
  for (int a = 0; const char *name = bagua_algorithm_name(bagua_algorithm(a)); ++a)
    names += std::string(", ") + name;
  return names;
}

}  // namespace

bool parse_settings(const char *(*getenv_fn)(const char *), Settings *out, std::string *error) {
  Settings s;
  const auto value_of = [&](const char *name) {
    const char *v = getenv_fn(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char *v = value_of("BAGUA_PMPI"); v && !parse_mode(v, &s.mode)) {
    *error = bad_value("BAGUA_PMPI", v, ("one of " + mode_names()).c_str());
    return false;
  }
  if (const char *v = value_of("BAGUA_PMPI_MIN_COUNT"); v && !parse_count(v, &s.min_count)) {
    *error = bad_value("BAGUA_PMPI_MIN_COUNT", v, "an integer in [0, 2147483647]");
    return false;
  }
  if (const char *v = value_of("BAGUA_PMPI_VERBOSE"); v && !parse_flag(v, &s.verbose)) {
    *error = bad_value("BAGUA_PMPI_VERBOSE", v, "0 or 1");
    return false;
  }
  if (const char *v = value_of("BAGUA_PMPI_IALLREDUCE"); v && !parse_flag(v, &s.iallreduce)) {
    *error = bad_value("BAGUA_PMPI_IALLREDUCE", v, "0 or 1");
    return false;
  }
  *out = s;
  return true;
}

}  // namespace bagua::pmpi
