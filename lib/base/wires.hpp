// The wire registry: one row per wire format (what crosses the wire), the
// only place that lists them. The support matrix, the selection policy, the
// codec adapters (host and device), bagua-info, the timeline, the cost model
// and the public names (bagua_algorithm_from_name) all derive from it; a new
// codec is its kernels (kernels/) and one row here (doc/architecture.md,
// "Adding a codec").
#pragma once

#include <cstdint>
#include <span>

#include "codec.h"
#include "dtype.hpp"

namespace bagua {

// The collective families: one row group of the support matrix each.
enum class Family : uint8_t {
  allreduce,       // bagua_allreduce, bagua_allreduce_alg and its named wrappers
  iallreduce,      // bagua_iallreduce, bagua_iallreduce_alg and its named wrappers
  bucket,          // the bucketed communicator's buckets
  partial,         // bagua_partial_reduce
  decentralized,   // bagua_decentralized_average
  lowprec,         // bagua_lowprec_*
  async,           // bagua_async_average_*
  reduce_scatter,  // bagua_reduce_scatter_block
};
constexpr int kFamilies = 8;
const char *family_name(Family f);

constexpr uint16_t family_bit(Family f) { return uint16_t(1u << unsigned(f)); }

// How a wire's block size is chosen: by a setting of the settings table
// (lib/base/env.cpp), or fixed by its format; casts have none (1).
struct BlockRule {
  const char *setting = nullptr;  // e.g. "BAGUA_CODEC_BLOCK"
  uint32_t fixed = 1;             // when setting is nullptr
};

// The most rows the registry may hold (arrays indexed by Wire).
constexpr int kMaxWires = 16;

struct WireInfo {
  Wire id;           // the bagua_algorithm value
  const char *name;  // as bagua_algorithm_name spells it; its kernels' name
  const char *summary;
  BlockRule block;
  // Rank among the wires by accuracy (higher: closer to exact); the
  // advisor recommends the most precise of equally fast ones.
  int precision;
  uint16_t families;  // family_bit of every family that offers it
  // fp16: each contribution is multiplied by 1/ranks (a sum of ranks
  // values stays in range), a reduced chunk too unless it is an average.
  bool prescale_by_ranks = false;
  // sign: error feedback, a state per buffer (bagua_sign_state_t); calls
  // keep state across steps (doc/faults.md).
  bool error_feedback = false;
  // The encoder reads float32 only: the adapters convert half inputs first.
  bool encodes_float32 = false;
  const codec::HostCodecKernels *host = nullptr;  // nullptr for exact
};

// Every wire format, exact first, in bagua_algorithm order.
std::span<const WireInfo> wires();
// The row of `w`, which must be valid (wire_valid).
const WireInfo &wire_info(Wire w);
bool wire_valid(int value);
// The row named `name`, or nullptr.
const WireInfo *wire_named(const char *name);
const char *wire_name(Wire w);
bool is_codec(Wire w);
// Whether `family` offers wire `w`.
bool offers(Family family, Wire w);
// The codec of low-precision decentralized averaging (the one codec wire
// that offers Family::lowprec).
const WireInfo &lowprec_wire();

}  // namespace bagua
