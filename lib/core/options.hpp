// Per-communicator settings, read from the BAGUA_* environment once when the
// communicator's state is created.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../base/status.hpp"
#include "cost_model.hpp"

namespace bagua {

enum class TransportKind { mpi, ucx };
enum class AllreduceAlgo { automatic, ring, recursive_doubling };

// Partial reduce (bagua_partial_reduce); see doc/partial.md.
enum class PartialWeights { uniform, staleness };
enum class PartialCompression { none, q8 };
struct PartialOptions {
  int group_size = 0;  // 0: half the ranks, rounded up
  int min_group_size = 2;
  int64_t deadline_ms = 10;
  int64_t deadline_min_ms = 1;
  int64_t deadline_max_ms = 1000;
  int tau = 16;
  PartialWeights weights = PartialWeights::uniform;
  PartialCompression compression = PartialCompression::none;
  int controller_rank = 0;
};

// Compressed allreduce (bagua_allreduce_q8/q4/fp16/sign); see doc/compressed.md.
struct CompressedOptions {
  bool hierarchical = false;
  int node_size = 0;  // 0: ranks sharing memory form a node
  int codec_block = 2048;
  int q4_block = 256;
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
