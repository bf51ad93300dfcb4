#include "options.hpp"

#include "../base/env.hpp"

namespace bagua {

Status options_load(Options *out) {
  Options o;
  int choice = 0;
  static constexpr const char *kTransports[] = {"mpi", "ucx"};
  BAGUA_TRY(env_choice("BAGUA_TRANSPORT", kTransports, &choice));
  o.transport = static_cast<TransportKind>(choice);
  static constexpr const char *kAlgos[] = {"auto", "ring", "rd"};
  BAGUA_TRY(env_choice("BAGUA_ALLREDUCE_ALGO", kAlgos, &choice));
  o.allreduce_algo = static_cast<AllreduceAlgo>(choice);
  int64_t value = 0;
  BAGUA_TRY(env_int("BAGUA_TIMEOUT_MS", 1, int64_t{1} << 40, &o.timeout_ms));
  BAGUA_TRY(env_int("BAGUA_RING_THRESHOLD", 0, int64_t{1} << 40, &value));
  o.ring_threshold_bytes = static_cast<size_t>(value);
  BAGUA_TRY(env_int("BAGUA_SEGMENT_BYTES", 4096, int64_t{1} << 30, &value));
  o.segment_bytes = static_cast<size_t>(value);
  *out = o;
  return BAGUA_SUCCESS;
}

}  // namespace bagua
