// Per-communicator settings, read from the BAGUA_* environment once when the
// communicator's state is created.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../base/status.hpp"

namespace bagua {

enum class TransportKind { mpi, ucx };
enum class AllreduceAlgo { automatic, ring, recursive_doubling };

struct Options {
  TransportKind transport = TransportKind::mpi;
  int64_t timeout_ms = 120000;
  AllreduceAlgo allreduce_algo = AllreduceAlgo::automatic;
  size_t ring_threshold_bytes = 65536;
  size_t segment_bytes = 1 << 20;
};

Status options_load(Options *out);

}  // namespace bagua
