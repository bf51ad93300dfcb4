#pragma once

#include <mpi.h>

#include "transport.hpp"

namespace bagua {

// The smallest MPI_TAG_UB the MPI standard allows; bagua's tag layout fits it.
constexpr Tag kMinTagUb = 32767;

// How the mpi transport cuts large messages (BAGUA_MPI_PIECE_BYTES).
struct MpiPieces {
  size_t bytes = 0;          // a message of at least this many bytes goes as pieces; 0: never
  bool remote_only = false;  // only to peers Open MPI reaches over TCP (auto)
  // The most pieces of sends to one peer posted to MPI at once; the others
  // wait in order and are posted as earlier ones complete. 0: no limit.
  size_t in_flight = 0;
};

// Point-to-point over MPI on `comm`, which the caller has duplicated so user
// traffic never matches ours; the caller keeps ownership of `comm`. Every
// rank must pass the same `pieces`. With `pieces.remote_only`, creation is
// collective (the ranks compare hosts within `timeout_ms`: mpi_hosts.hpp).
Status mpi_transport_create(MPI_Comm comm, MpiPieces pieces, int64_t timeout_ms,
                            std::unique_ptr<Transport> *out);

// BAGUA_MPI_PIECE_BYTES=auto: Open MPI's ob1 sends a message above the TCP
// BTL's eager limit with a rendezvous, whose acknowledgement waits behind the
// data the receiver itself is sending on the same connection; two ranks that
// send to each other at once then take turns, each at half the link
// (doc/transports.md, "Message pieces"). Pieces within the eager limit need no
// handshake. Returns that limit, less headers, for the peers this Open MPI may
// reach over ob1 and its TCP BTL (read through MPI_T): all of them when its
// shared-memory BTL is not selected, else those on other hosts. Without ob1
// and TCP (another MPI, or pml ucx): no pieces. Not collective.
MpiPieces mpi_transport_auto_pieces();

// The auto piece size for Open MPI's TCP eager limit: the limit less 128
// bytes of ob1 and TCP BTL headers, rounded down to 4 KiB (61440 for the
// default 65536); 0 (no pieces) below 4 KiB + 128.
size_t mpi_transport_piece_bytes_for(unsigned long long eager_limit);

}  // namespace bagua
