// Per-process counters of the interposer, printed as one line per rank at
// MPI_Finalize when BAGUA_PMPI_VERBOSE=1. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "route.hpp"

namespace bagua::pmpi {

class Stats {
 public:
  // One intercepted call of `bytes` that took `seconds`, sent where `route` says.
  void record(Route route, uint64_t bytes, double seconds);
  // A call bagua made itself (setup) that the re-entry guard sent to MPI.
  void record_inner();

  uint64_t calls(Route route) const;
  uint64_t inner_calls() const { return inner_.load(); }

  // "bagua-pmpi: rank 0: mode q8, min count 4096: routed 3 calls (48.0 MiB,
  // 0.412 s); passed 2 calls (8 B, 0.000 s: small 2); bagua's own calls 1".
  std::string summary(int rank, const Policy &policy) const;

 private:
  struct Counter {
    std::atomic<uint64_t> calls{0}, bytes{0}, nanoseconds{0};
  };
  std::array<Counter, kRouteCount> counters_;
  std::atomic<uint64_t> inner_{0};
};

}  // namespace bagua::pmpi
