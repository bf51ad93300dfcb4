#include "collectives.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../algo/allreduce.hpp"
#include "../algo/collectives.hpp"
#include "../mc/memory.hpp"
#include "comm.hpp"
#include "run.hpp"
#include "runtime.hpp"
#include "support.hpp"

namespace bagua {
namespace {

unsigned char *byte_at(const void *base, size_t offset) {
  return static_cast<unsigned char *>(const_cast<void *>(base)) + offset;
}

bool overlaps(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && x < y + b_bytes && y < x + a_bytes;
}

// A contiguous predefined datatype, or one of bagua's half types.
bool contiguous_predefined(MPI_Datatype t) {
  if (t == datatype_to_mpi(DType::f16) || t == datatype_to_mpi(DType::bf16)) return true;
  int integers = 0, addresses = 0, types = 0, combiner = 0;
  MPI_Type_get_envelope(t, &integers, &addresses, &types, &combiner);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_true_extent(t, &lb, &extent);
  int size = 0;
  MPI_Type_size(t, &size);
  return combiner == MPI_COMBINER_NAMED && lb == 0 && extent == size && size > 0;
}

// The type's MPI name and size hashed: equal on every rank for the same
// predefined type, unlike the handle's value.
uint32_t type_fingerprint(MPI_Datatype t, int size) {
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  MPI_Type_get_name(t, name, &length);
  std::vector<uint64_t> fields(name, name + length);
  fields.push_back(uint64_t(size));
  return fingerprint_of(fields);
}

Status check_host(const char *what, const void *buf, size_t bytes) {
  if (bytes == 0 || memory_type_of(buf) == Memory::host) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_INVALID_ARGUMENT,
              "%s is CUDA device memory; the data-movement calls take host buffers", what);
}

Status check_root(int root, int size) {
  if (root >= 0 && root < size) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_INVALID_ARGUMENT, "root %d is not a rank of the communicator (size %d)",
              root, size);
}

// One side (send or receive) of an exchange: its buffer and blocks.
struct Side {
  const char *name;  // "send" or "recv"
  const void *buf;
  bool in_place;
  bool significant;  // MPI reads this side's arguments on this rank
  size_t blocks;     // blocks the buffer holds
  size_t block = 0;  // bytes of one block
  uint32_t type = 0;
};

Status check_side(Side *side, int64_t count, MPI_Datatype datatype) {
  if (!side->significant) return BAGUA_SUCCESS;
  BAGUA_TRY(typed_bytes(side->name, count, datatype, &side->block, &side->type));
  const size_t bytes = side->block * side->blocks;
  if (bytes > 0 && side->buf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%sbuf is NULL with %scount %lld", side->name,
                side->name, static_cast<long long>(count));
  const std::string what = std::string(side->name) + "buf";
  return check_host(what.c_str(), side->buf, bytes);
}

// Where MPI allows MPI_IN_PLACE: as sendbuf of allgather and alltoall, and
// of gather at root; as recvbuf of scatter at root.
Status check_in_place(Movement kind, const Side &send, const Side &recv, bool root) {
  const bool send_ok = kind == Movement::allgather || kind == Movement::alltoall ||
                       (kind == Movement::gather && root);
  const bool recv_ok = kind == Movement::scatter && root;
  if ((send.in_place && !send_ok) || (recv.in_place && !recv_ok))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "MPI_IN_PLACE is not allowed as %sbuf of %s%s",
                send.in_place && !send_ok ? "send" : "recv", movement_name(kind),
                root || (kind != Movement::gather && kind != Movement::scatter)
                    ? ""
                    : " on a non-root rank");
  return BAGUA_SUCCESS;
}

// Both sides' blocks have the same size (MPI requires equal type
// signatures), and the buffers do not overlap.
Status check_sides_agree(const Side &send, const Side &recv) {
  if (!send.significant || !recv.significant) return BAGUA_SUCCESS;
  if (send.block != recv.block)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "sendcount x sendtype is %zu bytes but recvcount x recvtype is %zu; they must be "
                "equal",
                send.block, recv.block);
  if (overlaps(send.buf, send.block * send.blocks, recv.buf, recv.block * recv.blocks))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "sendbuf and recvbuf overlap; pass MPI_IN_PLACE for an in-place call");
  return BAGUA_SUCCESS;
}

Status mismatch(const MovementCall &call) {
  const std::string root = call.root < 0 ? "" : " with root " + std::to_string(call.root);
  return fail(BAGUA_ERR_MISMATCH,
              "the ranks do not make the same call (collective, count, datatype, op or root "
              "differ); this rank called %s of %zu bytes per rank%s",
              movement_name(call.kind), call.block, root.c_str());
}

uint32_t movement_fingerprint(const MovementCall &call) {
  const uint64_t fields[] = {uint64_t(call.kind), call.block,        call.type,
                             uint64_t(call.root), uint64_t(call.op), uint64_t(call.wire)};
  return fingerprint_of(fields);
}

// The exact reduction on an aligned copy of the input (any alignment and
// MPI_IN_PLACE alike); this rank's block of the result goes to recv.
Status reduce_scatter_exact(AlgoContext &ctx, const MovementCall &call) {
  const int n = ctx.transport.size();
  const size_t total = call.block * size_t(n);
  SendVector<uint64_t> work((total + 7) / 8);  // 8-byte words: aligned for every type
  if (total > 0) std::memcpy(work.data(), call.send, total);
  const AllreduceArgs args{work.data(), work.data(), call.count * size_t(n), call.dtype, call.op};
  BAGUA_TRY(reduce_scatter_ring(ctx, args));
  if (call.block > 0)
    std::memcpy(call.recv, byte_at(work.data(), call.block * size_t(ctx.transport.rank())),
                call.block);
  return BAGUA_SUCCESS;
}

bool aligned_to(const void *p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// A compressed reduction (ByteGrad's scatter phase) of the caller's input,
// or of an aligned copy of it where it is misaligned or in place (the
// algorithm reads the input while it writes recv); the result goes straight
// to an aligned recv, through a copy to a misaligned one.
Status reduce_scatter_with_codec(AlgoContext &ctx, const MovementCall &call,
                                 const Options &options) {
  const int n = ctx.transport.size();
  const size_t elem = dtype_size(call.dtype), total = call.block * size_t(n);
  Call described{};
  described.family = Family::reduce_scatter;
  described.wire = call.wire;
  described.count = call.count * size_t(n);
  described.dtype = call.dtype;
  described.op = call.op;
  described.memory = Memory::host;
  const std::unique_ptr<ChunkCodec> codec = make_call_codec(described, n, options);
  if (codec == nullptr)
    return fail(BAGUA_ERR_INTERNAL, "no %s codec for host memory", wire_name(call.wire));
  SendVector<uint64_t> input, output;  // 8-byte words: aligned for every type
  const void *src = call.send;
  if (total > 0 && (src == call.recv || !aligned_to(src, elem))) {
    input.resize((total + 7) / 8);
    std::memcpy(input.data(), call.send, total);
    src = input.data();
  }
  void *dst = call.recv;
  if (call.block > 0 && !aligned_to(dst, elem)) {
    output.resize((call.block + 7) / 8);
    dst = output.data();
  }
  const CompressedArgs args{src,        call.dtype,      dst,
                            call.dtype, described.count, call.op == ReduceOp::avg ? n : 1};
  BAGUA_TRY(reduce_scatter_compressed(ctx, *codec, args));
  if (dst != call.recv) std::memcpy(call.recv, dst, call.block);
  return BAGUA_SUCCESS;
}

Status run_algorithm(AlgoContext &ctx, const MovementCall &call, const Options &options) {
  switch (call.kind) {
    case Movement::barrier: return barrier_dissemination(ctx);
    case Movement::bcast: return bcast_binomial(ctx, call.recv, call.block, call.root);
    case Movement::allgather: return allgather_ring(ctx, call.send, call.recv, call.block);
    case Movement::gather: return gather_direct(ctx, call.send, call.recv, call.block, call.root);
    case Movement::scatter: return scatter_direct(ctx, call.send, call.recv, call.block, call.root);
    case Movement::alltoall: return alltoall_pairwise(ctx, call.send, call.recv, call.block);
    case Movement::reduce_scatter_block:
      return call.wire == Wire::exact ? reduce_scatter_exact(ctx, call)
                                      : reduce_scatter_with_codec(ctx, call, options);
  }
  return fail(BAGUA_ERR_INTERNAL, "unknown collective %d", int(call.kind));
}

// The point-to-point messages of a communicator (ExtensionKey::p2p).
class PointToPoint final : public CommExtension {
 public:
  Mailbox mailbox;
};

Status mailbox_of(Communicator &c, Mailbox **out) {
  PointToPoint *p2p = nullptr;
  BAGUA_TRY(c.extension<PointToPoint>(
      ExtensionKey::p2p,
      [](Communicator &, std::unique_ptr<PointToPoint> *made) {
        *made = std::make_unique<PointToPoint>();
        return BAGUA_SUCCESS;
      },
      &p2p));
  *out = &p2p->mailbox;
  return BAGUA_SUCCESS;
}

// A message's arguments: the buffer holds count elements, the peer is
// another rank, the tag is a user tag. *bytes is the message's size.
Status check_message(const char *peer_name, const void *buf, int64_t count, MPI_Datatype datatype,
                     int peer, int tag, const Communicator &c, size_t *bytes) {
  uint32_t type = 0;
  BAGUA_TRY(typed_bytes("", count, datatype, bytes, &type));
  if (*bytes > 0 && buf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "buf is NULL with count %lld",
                static_cast<long long>(count));
  BAGUA_TRY(check_host("buf", buf, *bytes));
  if (peer < 0 || peer >= c.size())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s %d is not a rank of the communicator (size %d; MPI_ANY_SOURCE and "
                "MPI_PROC_NULL are not supported)",
                peer_name, peer, c.size());
  if (peer == c.rank())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s %d is this rank; a blocking message to itself would never complete", peer_name,
                peer);
  if (tag < 0 || tag > kMaxUserTag)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "tag %d is not in [0, %d] (MPI_ANY_TAG is not supported)", tag, kMaxUserTag);
  return BAGUA_SUCCESS;
}

// Checks a message's arguments, then runs body(mailbox, ctx, bytes) in c's
// point-to-point slot and records its outcome in c.
template <class Body>
Status with_mailbox(Communicator &c, const char *peer_name, const void *buf, int64_t count,
                    MPI_Datatype datatype, int peer, int tag, Body body) {
  size_t bytes = 0;
  BAGUA_TRY(check_message(peer_name, buf, count, datatype, peer, tag, c, &bytes));
  Mailbox *mailbox = nullptr;
  BAGUA_TRY(mailbox_of(c, &mailbox));
  AlgoContext ctx = c.point_to_point();
  return c.record(body(*mailbox, ctx, bytes));
}

}  // namespace

const char *movement_name(Movement m) {
  switch (m) {
    case Movement::barrier: return "barrier";
    case Movement::bcast: return "bcast";
    case Movement::allgather: return "allgather";
    case Movement::gather: return "gather";
    case Movement::scatter: return "scatter";
    case Movement::alltoall: return "alltoall";
    case Movement::reduce_scatter_block: return "reduce_scatter_block";
  }
  return "?";
}

const char *movement_support_text() {
  return "bagua_barrier, bagua_bcast, bagua_allgather, bagua_gather, bagua_scatter, "
         "bagua_alltoall, bagua_send, bagua_recv: contiguous predefined datatypes, "
         "BAGUA_FLOAT16 or BAGUA_BFLOAT16; host memory";
}

Status typed_bytes(const char *what, int64_t count, MPI_Datatype datatype, size_t *bytes,
                   uint32_t *type) {
  if (count < 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%scount %lld is negative", what,
                static_cast<long long>(count));
  if (datatype == MPI_DATATYPE_NULL)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%stype is MPI_DATATYPE_NULL", *what ? what : "data");
  if (!contiguous_predefined(datatype))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%stype is not a contiguous predefined datatype, BAGUA_FLOAT16 or "
                "BAGUA_BFLOAT16 (derived datatypes are not supported)",
                *what ? what : "data");
  int size = 0;
  MPI_Type_size(datatype, &size);
  *bytes = static_cast<size_t>(count) * static_cast<size_t>(size);
  *type = type_fingerprint(datatype, size);
  return BAGUA_SUCCESS;
}

Status describe_exchange(Movement kind, const MovementArgs &args, int rank, int size,
                         MovementCall *out) {
  const bool rooted = kind == Movement::gather || kind == Movement::scatter;
  if (rooted) BAGUA_TRY(check_root(args.root, size));
  const bool root = rooted && rank == args.root;
  const auto n = static_cast<size_t>(size);
  // MPI reads sendbuf on every rank but scatter's non-roots, recvbuf on
  // every rank but gather's non-roots.
  const bool send_used = kind != Movement::scatter || root;
  const bool recv_used = kind != Movement::gather || root;
  Side send{"send", args.sendbuf, send_used && args.sendbuf == MPI_IN_PLACE, send_used, 1};
  Side recv{"recv", args.recvbuf, recv_used && args.recvbuf == MPI_IN_PLACE, recv_used, 1};
  BAGUA_TRY(check_in_place(kind, send, recv, root));
  send.significant = send_used && !send.in_place;
  recv.significant = recv_used && !recv.in_place;
  send.blocks = kind == Movement::alltoall || kind == Movement::scatter ? n : 1;
  recv.blocks = kind == Movement::scatter ? 1 : n;
  BAGUA_TRY(check_side(&send, args.sendcount, args.sendtype));
  BAGUA_TRY(check_side(&recv, args.recvcount, args.recvtype));
  BAGUA_TRY(check_sides_agree(send, recv));
  const Side &typed = recv.significant ? recv : send;
  *out = MovementCall{kind,        args.sendbuf, args.recvbuf,
                      typed.block, typed.type,   rooted ? args.root : -1};
  // In place: the input is this rank's block of recvbuf (alltoall: all of it).
  if (send.in_place)
    out->send = kind == Movement::alltoall ? args.recvbuf
                                           : byte_at(args.recvbuf, typed.block * size_t(rank));
  if (recv.in_place) out->recv = byte_at(args.sendbuf, typed.block * size_t(rank));
  return BAGUA_SUCCESS;
}

Status describe_bcast(void *buf, int64_t count, MPI_Datatype datatype, int root, int size,
                      MovementCall *out) {
  BAGUA_TRY(check_root(root, size));
  size_t bytes = 0;
  uint32_t type = 0;
  BAGUA_TRY(typed_bytes("", count, datatype, &bytes, &type));
  if (bytes > 0 && buf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "buf is NULL with count %lld",
                static_cast<long long>(count));
  BAGUA_TRY(check_host("buf", buf, bytes));
  *out = MovementCall{Movement::bcast, buf, buf, bytes, type, root};
  return BAGUA_SUCCESS;
}

Status describe_reduce_scatter(const void *sendbuf, void *recvbuf, int64_t recvcount,
                               MPI_Datatype datatype, MPI_Op op, Wire wire, int size,
                               MovementCall *out) {
  if (recvcount < 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "recvcount %lld is negative",
                static_cast<long long>(recvcount));
  MovementCall call{Movement::reduce_scatter_block, sendbuf, recvbuf, 0, 0, -1};
  BAGUA_TRY(dtype_from_mpi(datatype, &call.dtype));
  BAGUA_TRY(op_from_mpi(op, &call.op));
  call.count = static_cast<size_t>(recvcount);
  call.wire = wire;
  call.block = call.count * dtype_size(call.dtype);
  call.type = uint32_t(call.dtype);
  const size_t total = call.block * static_cast<size_t>(size);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (call.block > 0 && (recvbuf == nullptr || recvbuf == MPI_IN_PLACE))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is %s with recvcount %zu",
                recvbuf == nullptr ? "NULL" : "MPI_IN_PLACE", call.count);
  if (call.block > 0 && !in_place && sendbuf == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL with recvcount %zu", call.count);
  if (in_place) call.send = recvbuf;
  if (!in_place && overlaps(sendbuf, total, recvbuf, call.block))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "sendbuf and recvbuf overlap; pass MPI_IN_PLACE for an in-place call");
  const bool on_device = total > 0 && (memory_type_of(call.send) == Memory::cuda ||
                                       memory_type_of(recvbuf) == Memory::cuda);
  BAGUA_TRY(check_support(Family::reduce_scatter, wire, call.dtype, call.op,
                          on_device ? Memory::cuda : Memory::host));
  *out = call;
  return BAGUA_SUCCESS;
}

Status run_movement(AlgoContext &ctx, const MovementCall &call, const Options &options) {
  if (options.check_calls && ctx.transport.size() > 1) {
    bool same = false;
    BAGUA_TRY(agree_on_fingerprint(ctx, movement_fingerprint(call), &same));
    if (!same) return mismatch(call);
  }
  return run_algorithm(ctx, call, options);
}

Status run_movement(Communicator &c, const MovementCall &call) {
  AlgoContext ctx = c.next_call();
  return c.record(run_movement(ctx, call, c.options()));
}

Status send_message(Communicator &c, const void *buf, int64_t count, MPI_Datatype datatype,
                    int dest, int tag) {
  return with_mailbox(c, "dest", buf, count, datatype, dest, tag,
                      [&](Mailbox &mailbox, AlgoContext &ctx, size_t bytes) {
                        return mailbox.send(ctx, buf, bytes, dest, tag);
                      });
}

Status recv_message(Communicator &c, void *buf, int64_t count, MPI_Datatype datatype, int source,
                    int tag) {
  return with_mailbox(c, "source", buf, count, datatype, source, tag,
                      [&](Mailbox &mailbox, AlgoContext &ctx, size_t bytes) {
                        return mailbox.recv(ctx, buf, bytes, source, tag);
                      });
}

}  // namespace bagua
