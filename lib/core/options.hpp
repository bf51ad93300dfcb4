// Per-communicator settings, read from the BAGUA_* environment once when the
// communicator's state is created. A default-constructed Options holds every
// setting's default from the one table (lib/base/env.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "../base/env.hpp"
#include "../base/status.hpp"
#include "../base/wires.hpp"

namespace bagua {

enum class TransportKind { mpi, ucx };
enum class AllreduceAlgo { automatic, ring, recursive_doubling };

// Partial reduce (bagua_partial_reduce); see doc/partial.md.
enum class PartialWeights { uniform, staleness };
struct PartialOptions {
  int group_size = int(env_default_int("BAGUA_PARTIAL_GROUP_SIZE"));  // 0: half the ranks
  int min_group_size = int(env_default_int("BAGUA_PARTIAL_MIN_GROUP_SIZE"));
  int64_t deadline_ms = env_default_int("BAGUA_PARTIAL_DEADLINE_MS");
  int64_t deadline_min_ms = env_default_int("BAGUA_PARTIAL_DEADLINE_MIN_MS");
  int64_t deadline_max_ms = env_default_int("BAGUA_PARTIAL_DEADLINE_MAX_MS");
  int tau = int(env_default_int("BAGUA_PARTIAL_TAU"));  // 0: sized to the ranks and P
  PartialWeights weights = PartialWeights::uniform;
  // BAGUA_PARTIAL_COMPRESSION: the wire of the group averages (exact: none).
  Wire compression = Wire::exact;
  int controller_rank = int(env_default_int("BAGUA_PARTIAL_CONTROLLER"));
  bool operator==(const PartialOptions &) const = default;
};

// Compressed allreduce (bagua_allreduce_alg and its named wrappers); see
// doc/compressed.md.
struct CompressedOptions {
  CompressedOptions();  // every wire's block at its setting's default
  bool hierarchical = env_default_int("BAGUA_HIERARCHICAL") != 0;
  int node_size = int(env_default_int("BAGUA_NODE_SIZE"));  // 0: ranks sharing memory
  // Elements per block of each wire (its BlockRule: the setting's value, or
  // the size its format fixes).
  std::array<uint32_t, kMaxWires> blocks{};
  uint32_t block(Wire w) const { return blocks[size_t(w)]; }
  // Tests: every wire whose block is a setting gets `elems`.
  void set_setting_blocks(uint32_t elems);
  bool operator==(const CompressedOptions &) const = default;
};

struct Options {
  CompressedOptions compressed;
  PartialOptions partial;
  TransportKind transport = TransportKind::mpi;
  int64_t timeout_ms = env_default_int("BAGUA_TIMEOUT_MS");
  AllreduceAlgo allreduce_algo = AllreduceAlgo::automatic;
  size_t ring_threshold_bytes = size_t(env_default_int("BAGUA_RING_THRESHOLD"));
  size_t segment_bytes = size_t(env_default_int("BAGUA_SEGMENT_BYTES"));
  int64_t tag_ub = env_default_int("BAGUA_TAG_UB");  // 0: the transport's largest tag
  // Ranks agree on each call before data moves.
  bool check_calls = env_default_int("BAGUA_CHECK_CALLS") != 0;
  // Nonblocking calls per communicator (<= the tag slots).
  int max_in_flight = int(env_default_int("BAGUA_MAX_IN_FLIGHT"));
  // BAGUA_MPI_PIECE_BYTES: messages of at least this many bytes travel as
  // pieces of it over the mpi transport (to every peer); 0: whole messages;
  // kAutoPieces: decided by the transport (lib/transport/mpi_transport.hpp).
  static constexpr int64_t kAutoPieces = -1;
  int64_t mpi_piece_bytes = kAutoPieces;
  // BAGUA_MPI_PIECES_IN_FLIGHT: the most pieces of sends to one peer posted
  // to MPI at once; 0: all of them.
  int mpi_pieces_in_flight = int(env_default_int("BAGUA_MPI_PIECES_IN_FLIGHT"));
  bool operator==(const Options &) const = default;
};

Status options_load(Options *out);

}  // namespace bagua
