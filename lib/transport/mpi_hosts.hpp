// Which ranks of a communicator run on another host, as Open MPI places its
// shared-memory BTL (by MPI_Get_processor_name). A process's host never
// changes, so what one communicator learns serves every later one: the
// hosts of MPI_COMM_WORLD's ranks are kept for the life of the process.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "../base/status.hpp"

namespace bagua {

// Collective over `comm`, each step bounded by `timeout_ms`: (*out)[p] is
// whether rank p of `comm` runs on another host than this rank. One small
// allreduce when every rank already knows its peers' hosts (from an earlier
// communicator); otherwise an allgather of host names too, whose messages
// grow with the ranks.
Status mpi_peers_on_other_hosts(MPI_Comm comm, int64_t timeout_ms, std::vector<bool> *out);

}  // namespace bagua
