// The one table of BAGUA_* environment variables, and typed readers of them.
// Every user-settable parameter is listed here with its default, so bagua-info
// and doc/api.md stay complete.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "status.hpp"

namespace bagua {

struct EnvVar {
  const char *name;
  const char *default_value;
  const char *description;
  // Settings that shape messages must be equal on every rank; those that
  // only affect this rank (a timeout, an output file) may differ.
  bool per_rank = false;
  // An earlier name still read when `name` is not set.
  const char *alias = nullptr;
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

// Parses `name` as an integer in [lo, hi]; a malformed or out-of-range value
// is an error naming the variable.
Status env_int(const char *name, int64_t lo, int64_t hi, int64_t *out);

// Parses `name` as one of `choices`; *out is the index of the match.
Status env_choice(const char *name, std::span<const char *const> choices, int *out);

}  // namespace bagua
