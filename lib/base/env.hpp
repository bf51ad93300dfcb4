// The one table of BAGUA_* environment variables, and typed readers of them.
// Every user-settable parameter is listed here with its default, its range
// (integers) and its meaning; nothing else states a default (the options'
// initial values read it from here), and bagua-info and doc/ list it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "status.hpp"

namespace bagua {

// The values an integer setting accepts; lo > hi: not an integer setting.
struct EnvRange {
  int64_t lo = 0, hi = -1;
  bool integer() const { return lo <= hi; }
};

struct EnvVar {
  const char *name;
  const char *default_value;
  const char *description;
  // Settings that shape messages must be equal on every rank; those that
  // only affect this rank (a timeout, an output file) may differ.
  bool per_rank = false;
  // An earlier name still read when `name` is not set.
  const char *alias = nullptr;
  EnvRange range{};
};

// All variables, in documentation order.
std::span<const EnvVar> env_vars();

// The default of `name` in the table ("" if it is not there).
const char *env_default(const char *name);

// The value of `name` (which must be in env_vars()), or its default.
std::string env_string(const char *name);

// A hash of every setting that must agree across ranks, as this process sees
// them (defaults included).
uint64_t env_fingerprint();

// Parses `name`, an integer setting, within its range; a malformed or
// out-of-range value is an error naming the variable and the range.
Status env_int(const char *name, int64_t *out);

// The table's default of `name`, an integer setting (what options start as).
int64_t env_default_int(const char *name);

// Parses `name` as one of `choices`; *out is the index of the match.
Status env_choice(const char *name, std::span<const char *const> choices, int *out);

}  // namespace bagua
