// The MPI collectives bagua makes while setting up a communicator (option
// agreement, duplication, layout checks), bounded by BAGUA_TIMEOUT_MS: a
// peer that never makes the matching call gives BAGUA_ERR_TIMEOUT instead of
// a hang. A collective that timed out stays posted (MPI cannot cancel
// collectives), so its buffers are kept alive until MPI_Finalize, and the
// communicator it ran on is marked unusable for bagua.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <vector>

#include "../base/status.hpp"
#include "exchange.hpp"

namespace bagua {

// Collective over `comm`: *out[i] = max over ranks of in[i], within
// `timeout_ms`. `what` names the step in the timeout message.
Status bounded_allreduce_max(MPI_Comm comm, std::span<const int64_t> in, std::span<int64_t> out,
                             int64_t timeout_ms, const char *what);

// Collective: MPI_Comm_dup of `comm` within `timeout_ms`, errors returned.
Status bounded_dup(MPI_Comm comm, int64_t timeout_ms, MPI_Comm *out);
// Frees a duplicate bounded_dup made (Live::duplicate counts those not freed).
void free_dup(MPI_Comm *dup);

// Collective: every rank's `mine` bytes, concatenated in rank order into
// *all; rank p's start at (*offsets)[p].
Status bounded_allgather_bytes(MPI_Comm comm, std::span<const char> mine, int64_t timeout_ms,
                               const char *what, std::vector<char> *all, std::vector<int> *offsets);

// The setup collective over `comm`, each step bounded by `timeout_ms`.
class MpiExchange final : public Exchange {
 public:
  MpiExchange(MPI_Comm comm, int64_t timeout_ms);
  Status allgather(std::span<const char> mine, const char *what, std::vector<char> *all,
                   std::vector<int> *offsets) override;
  Status max(std::span<const int64_t> in, std::span<int64_t> out, const char *what) override;

 private:
  MPI_Comm comm_;
  int64_t timeout_ms_;
};

// Frees what timed-out setup collectives left posted, where MPI has completed
// them since; the rest stays allocated. Called inside MPI_Finalize.
void bounded_release_completed();

}  // namespace bagua
