#include "env.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace bagua {
namespace {

constexpr EnvVar kVars[] = {
    {"BAGUA_TRANSPORT", "mpi",
     "Point-to-point transport per communicator: mpi (Open MPI pml on a duplicated "
     "communicator) or ucx (bagua's own UCP worker)."},
    {"BAGUA_TIMEOUT_MS", "120000",
     "How long any wait for a peer may last before the call fails with "
     "BAGUA_ERR_TIMEOUT and the communicator is marked broken."},
    {"BAGUA_ALLREDUCE_ALGO", "auto",
     "Exact allreduce algorithm: auto (by BAGUA_RING_THRESHOLD), ring, or rd "
     "(recursive doubling)."},
    {"BAGUA_RING_THRESHOLD", "65536",
     "Message size in bytes from which auto uses the ring instead of recursive doubling."},
    {"BAGUA_SEGMENT_BYTES", "1048576",
     "Pipeline segment size in bytes for ring algorithms (4096 .. 1 GiB)."},
    // @env compressed
    // @env partial
    // @env decentralized
    // @env buckets
};

const char *lookup(const char *name) {
  const char *value = std::getenv(name);
  if (value != nullptr && *value != '\0') return value;
  for (const EnvVar &v : kVars)
    if (std::strcmp(v.name, name) == 0) return v.default_value;
  return "";
}

}  // namespace

std::span<const EnvVar> env_vars() { return kVars; }

std::string env_string(const char *name) { return lookup(name); }

Status env_int(const char *name, int64_t lo, int64_t hi, int64_t *out) {
  const char *text = lookup(name);
  char *end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < lo || value > hi)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s='%s' is not an integer in [%lld, %lld]", name,
                text, static_cast<long long>(lo), static_cast<long long>(hi));
  *out = value;
  return BAGUA_SUCCESS;
}

Status env_choice(const char *name, std::span<const char *const> choices, int *out) {
  const char *text = lookup(name);
  for (size_t i = 0; i < choices.size(); ++i) {
    if (std::strcmp(text, choices[i]) == 0) {
      *out = static_cast<int>(i);
      return BAGUA_SUCCESS;
    }
  }
  std::string allowed;
  for (const char *c : choices) allowed += std::string(allowed.empty() ? "" : ", ") + c;
  return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s='%s' is not one of: %s", name, text,
              allowed.c_str());
}

}  // namespace bagua
