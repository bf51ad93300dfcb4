// A Transport whose ranks are threads of one process (test infrastructure:
// the in-process harness, test/inproc/). One LoopbackFabric holds the n
// endpoints; each endpoint has a mailbox of the messages sent to it and of
// the receives it has posted, matched per (source, tag) in order. A send
// copies its bytes at once (into a posted receive, or into the mailbox), so
// isend completes immediately; a receive of another size completes with
// BAGUA_ERR_MISMATCH and writes nothing. Every call is thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "transport.hpp"

namespace bagua {

class LoopbackEndpoint;

// The loopback's largest tag: the smallest MPI_TAG_UB the MPI standard
// allows, so the in-process tests run the narrowest tag layout.
constexpr Tag kLoopbackMaxTag = 32767;

class LoopbackFabric {
 public:
  explicit LoopbackFabric(int ranks);
  ~LoopbackFabric();
  LoopbackFabric(const LoopbackFabric &) = delete;
  LoopbackFabric &operator=(const LoopbackFabric &) = delete;

  // The transport of `rank`; it lives as long as the fabric.
  Transport &endpoint(int rank);

 private:
  std::vector<std::unique_ptr<LoopbackEndpoint>> endpoints_;
};

}  // namespace bagua
