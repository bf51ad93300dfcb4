#include "options.hpp"

#include <cstdlib>
#include <vector>

#include "../base/env.hpp"

namespace bagua {
namespace {

Status int_option(const char *name, int *out) {
  int64_t value = 0;
  BAGUA_TRY(env_int(name, &value));
  *out = static_cast<int>(value);
  return BAGUA_SUCCESS;
}

// BAGUA_PARTIAL_COMPRESSION: none, or a wire the partial family offers.
Status load_partial_compression(Wire *out) {
  std::vector<const char *> choices = {"none"};
  std::vector<Wire> choice_wires = {Wire::exact};
  for (const WireInfo &w : wires())
    if (is_codec(w.id) && offers(Family::partial, w.id)) {
      choices.push_back(w.name);
      choice_wires.push_back(w.id);
    }
  int choice = 0;
  BAGUA_TRY(env_choice("BAGUA_PARTIAL_COMPRESSION", choices, &choice));
  *out = choice_wires[size_t(choice)];
  return BAGUA_SUCCESS;
}

Status load_partial(PartialOptions *p) {
  BAGUA_TRY(int_option("BAGUA_PARTIAL_GROUP_SIZE", &p->group_size));
  BAGUA_TRY(int_option("BAGUA_PARTIAL_MIN_GROUP_SIZE", &p->min_group_size));
  BAGUA_TRY(env_int("BAGUA_PARTIAL_DEADLINE_MS", &p->deadline_ms));
  BAGUA_TRY(env_int("BAGUA_PARTIAL_DEADLINE_MIN_MS", &p->deadline_min_ms));
  BAGUA_TRY(env_int("BAGUA_PARTIAL_DEADLINE_MAX_MS", &p->deadline_max_ms));
  if (p->deadline_min_ms > p->deadline_ms || p->deadline_ms > p->deadline_max_ms)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "BAGUA_PARTIAL_DEADLINE_MIN_MS <= BAGUA_PARTIAL_DEADLINE_MS <= "
                "BAGUA_PARTIAL_DEADLINE_MAX_MS does not hold (%lld, %lld, %lld)",
                static_cast<long long>(p->deadline_min_ms), static_cast<long long>(p->deadline_ms),
                static_cast<long long>(p->deadline_max_ms));
  BAGUA_TRY(int_option("BAGUA_PARTIAL_TAU", &p->tau));
  BAGUA_TRY(int_option("BAGUA_PARTIAL_CONTROLLER", &p->controller_rank));
  static constexpr const char *kWeights[] = {"uniform", "staleness"};
  int choice = 0;
  BAGUA_TRY(env_choice("BAGUA_PARTIAL_WEIGHTS", kWeights, &choice));
  p->weights = static_cast<PartialWeights>(choice);
  return load_partial_compression(&p->compression);
}

// A codec block size: a power of two (its range is the table's).
Status block_option(const char *name, int *out) {
  BAGUA_TRY(int_option(name, out));
  if ((*out & (*out - 1)) != 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s='%d' is not a power of two", name, *out);
  return BAGUA_SUCCESS;
}

Status load_compressed(CompressedOptions *c) {
  int hierarchical = 0;
  BAGUA_TRY(int_option("BAGUA_HIERARCHICAL", &hierarchical));
  c->hierarchical = hierarchical != 0;
  BAGUA_TRY(int_option("BAGUA_NODE_SIZE", &c->node_size));
  for (const WireInfo &w : wires()) {
    if (w.block.setting == nullptr) continue;
    int block = 0;
    BAGUA_TRY(block_option(w.block.setting, &block));
    c->blocks[size_t(w.id)] = uint32_t(block);
  }
  return BAGUA_SUCCESS;
}

// BAGUA_MPI_PIECE_BYTES: auto, 0, or 1024 .. 1 GiB.
Status load_piece_bytes(int64_t *out) {
  constexpr const char *kName = "BAGUA_MPI_PIECE_BYTES";
  if (env_string(kName) == "auto") {
    *out = Options::kAutoPieces;
    return BAGUA_SUCCESS;
  }
  BAGUA_TRY(env_int(kName, out));
  if (*out != 0 && *out < 1024)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s='%lld': use auto, 0 or 1024 .. 1073741824", kName,
                static_cast<long long>(*out));
  return BAGUA_SUCCESS;
}

}  // namespace

CompressedOptions::CompressedOptions() {
  for (const WireInfo &w : wires())
    blocks[size_t(w.id)] = w.block.setting == nullptr
                               ? w.block.fixed
                               : uint32_t(std::strtoul(env_default(w.block.setting), nullptr, 10));
}

void CompressedOptions::set_setting_blocks(uint32_t elems) {
  for (const WireInfo &w : wires())
    if (w.block.setting != nullptr) blocks[size_t(w.id)] = elems;
}

Status options_load(Options *out) {
  Options o;
  int choice = 0;
  static constexpr const char *kTransports[] = {"mpi", "ucx"};
  BAGUA_TRY(env_choice("BAGUA_TRANSPORT", kTransports, &choice));
  o.transport = static_cast<TransportKind>(choice);
  static constexpr const char *kAlgos[] = {"auto", "ring", "rd"};
  BAGUA_TRY(env_choice("BAGUA_ALLREDUCE_SCHEDULE", kAlgos, &choice));
  o.allreduce_algo = static_cast<AllreduceAlgo>(choice);
  int64_t value = 0;
  BAGUA_TRY(env_int("BAGUA_TIMEOUT_MS", &o.timeout_ms));
  BAGUA_TRY(env_int("BAGUA_RING_THRESHOLD", &value));
  o.ring_threshold_bytes = static_cast<size_t>(value);
  BAGUA_TRY(env_int("BAGUA_SEGMENT_BYTES", &value));
  o.segment_bytes = static_cast<size_t>(value);
  BAGUA_TRY(env_int("BAGUA_TAG_UB", &o.tag_ub));
  if (o.tag_ub != 0 && o.tag_ub < 32767)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "BAGUA_TAG_UB=%lld is below 32767, the smallest MPI_TAG_UB the MPI standard "
                "allows (0: use the transport's)",
                static_cast<long long>(o.tag_ub));
  int check = 1;
  BAGUA_TRY(int_option("BAGUA_CHECK_CALLS", &check));
  o.check_calls = check != 0;
  BAGUA_TRY(int_option("BAGUA_MAX_IN_FLIGHT", &o.max_in_flight));
  BAGUA_TRY(load_piece_bytes(&o.mpi_piece_bytes));
  BAGUA_TRY(int_option("BAGUA_MPI_PIECES_IN_FLIGHT", &o.mpi_pieces_in_flight));
  BAGUA_TRY(load_partial(&o.partial));
  BAGUA_TRY(load_compressed(&o.compressed));
  *out = o;
  return BAGUA_SUCCESS;
}

}  // namespace bagua
