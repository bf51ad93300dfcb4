// Per-communicator settings, read from the BAGUA_* environment once when the
// communicator's state is created.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "../base/status.hpp"
#include "../base/wires.hpp"
#include "cost_model.hpp"

namespace bagua {

enum class TransportKind { mpi, ucx };
enum class AllreduceAlgo { automatic, ring, recursive_doubling };

// Partial reduce (bagua_partial_reduce); see doc/partial.md.
enum class PartialWeights { uniform, staleness };
struct PartialOptions {
  int group_size = 0;  // 0: half the ranks, rounded up
  int min_group_size = 2;
  int64_t deadline_ms = 10;
  int64_t deadline_min_ms = 1;
  int64_t deadline_max_ms = 1000;
  int tau = 0;
  PartialWeights weights = PartialWeights::uniform;
  // BAGUA_PARTIAL_COMPRESSION: the wire of the group averages (exact: none).
  Wire compression = Wire::exact;
  int controller_rank = 0;
};

// Compressed allreduce (bagua_allreduce_alg and its named wrappers); see
// doc/compressed.md.
struct CompressedOptions {
  CompressedOptions();  // every wire's block at its setting's default
  bool hierarchical = false;
  int node_size = 0;  // 0: ranks sharing memory form a node
  // Elements per block of each wire (its BlockRule: the setting's value, or
  // the size its format fixes).
  std::array<uint32_t, kMaxWires> blocks{};
  uint32_t block(Wire w) const { return blocks[size_t(w)]; }
  // Tests: every wire whose block is a setting gets `elems`.
  void set_setting_blocks(uint32_t elems);
};

struct Options {
  CompressedOptions compressed;
  PartialOptions partial;
  TransportKind transport = TransportKind::mpi;
  int64_t timeout_ms = 120000;
  AllreduceAlgo allreduce_algo = AllreduceAlgo::automatic;
  size_t ring_threshold_bytes = default_ring_threshold();
  size_t segment_bytes = 1 << 20;
  int64_t tag_ub = 0;        // 0: the transport's largest tag
  bool check_calls = true;   // ranks agree on each call before data moves
  int max_in_flight = 1024;  // nonblocking calls per communicator (<= the tag slots)
  // BAGUA_MPI_PIECE_BYTES: messages of at least this many bytes travel as
  // pieces of it over the mpi transport (to every peer); 0: whole messages;
  // kAutoPieces: decided by the transport (lib/transport/mpi_transport.hpp).
  static constexpr int64_t kAutoPieces = -1;
  int64_t mpi_piece_bytes = kAutoPieces;
  // BAGUA_MPI_PIECES_IN_FLIGHT: the most pieces of sends to one peer posted
  // to MPI at once; 0: all of them.
  int mpi_pieces_in_flight = 64;
};

Status options_load(Options *out);

}  // namespace bagua
