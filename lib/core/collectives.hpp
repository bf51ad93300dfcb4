// The data-movement collectives (bagua_barrier, bagua_bcast, bagua_allgather,
// bagua_gather, bagua_scatter, bagua_alltoall, bagua_reduce_scatter_block)
// and point-to-point messages (bagua_send, bagua_recv): descriptors built
// from MPI-style arguments, the per-call agreement, and the run over a
// communicator's transport. Sizes and ranks come from the Communicator, never
// from MPI calls on the user's communicator.
#pragma once

#include <mpi.h>

#include <cstdint>

#include "../base/dtype.hpp"
#include "../base/status.hpp"
#include "../base/wires.hpp"
#include "options.hpp"

namespace bagua {

class Communicator;
struct AlgoContext;

enum class Movement : uint8_t {
  barrier,
  bcast,
  allgather,
  gather,
  scatter,
  alltoall,
  reduce_scatter_block
};
const char *movement_name(Movement m);

// One rank's view of a data-movement call. A block is one rank's share.
struct MovementCall {
  Movement kind;
  const void *send;  // this rank's input: its block (all blocks for scatter at
                     // root, alltoall, reduce_scatter_block); in place resolved
  void *recv;        // this rank's output: all blocks for allgather, gather at
                     // root and alltoall; its block otherwise (bcast: the buffer)
  size_t block;      // bytes of one block
  uint32_t type;     // the element type's fingerprint (its MPI name)
  int root;          // -1 for calls without a root
  // reduce_scatter_block: elements per block, their type, the op and the
  // wire format (exact: the ring; a codec: ByteGrad's scatter phase).
  size_t count = 0;
  DType dtype = DType::f32;
  ReduceOp op = ReduceOp::sum;
  Wire wire = Wire::exact;
};

// The bytes of `count` elements of `datatype` (argument `what`: "sendtype",
// ...) and the type's fingerprint: contiguous predefined datatypes and
// BAGUA_FLOAT16 / BAGUA_BFLOAT16; others fail with
// BAGUA_ERR_INVALID_ARGUMENT. `count` < 0 fails too.
Status typed_bytes(const char *what, int64_t count, MPI_Datatype datatype, size_t *bytes,
                   uint32_t *type);

// The MPI arguments of one call. Buffers and counts as MPI takes them;
// MPI_IN_PLACE where MPI allows it. rank and size are the communicator's.
struct MovementArgs {
  const void *sendbuf;
  int64_t sendcount;
  MPI_Datatype sendtype;
  void *recvbuf;
  int64_t recvcount;
  MPI_Datatype recvtype;
  int root;
};

// Checks the arguments of allgather, gather, scatter or alltoall (NULL
// buffers with data, root in range, MPI_IN_PLACE only where MPI allows it,
// send and receive blocks of equal size, overlapping buffers) and builds
// the call.
Status describe_exchange(Movement kind, const MovementArgs &args, int rank, int size,
                         MovementCall *out);
// bagua_bcast's arguments.
Status describe_bcast(void *buf, int64_t count, MPI_Datatype datatype, int root, int size,
                      MovementCall *out);
// bagua_reduce_scatter_block(_alg)'s arguments in `wire` (datatypes and ops
// of its support-matrix row).
Status describe_reduce_scatter(const void *sendbuf, void *recvbuf, int64_t recvcount,
                               MPI_Datatype datatype, MPI_Op op, Wire wire, int size,
                               MovementCall *out);

// What the calls other than reduce_scatter_block (a support-matrix row)
// accept, as bagua-info --support prints it.
const char *movement_support_text();

// Runs `call` among the ranks of ctx: the ranks first agree on a fingerprint
// of (kind, block bytes, element type, root, op; BAGUA_CHECK_CALLS=0 skips
// it; the wire format too), so ranks whose calls differ all return
// BAGUA_ERR_MISMATCH before data moves.
Status run_movement(AlgoContext &ctx, const MovementCall &call, const Options &options);
// The same as a blocking call on c (its next tag slot); failures are
// recorded in c.
Status run_movement(Communicator &c, const MovementCall &call);

// Blocking point-to-point messages on c's point-to-point tag slot, with a
// user tag in [0, kMaxUserTag]; the peer must be another rank of c.
constexpr int kMaxUserTag = 32767;
Status send_message(Communicator &c, const void *buf, int64_t count, MPI_Datatype datatype,
                    int dest, int tag);
Status recv_message(Communicator &c, void *buf, int64_t count, MPI_Datatype datatype, int source,
                    int tag);

}  // namespace bagua
