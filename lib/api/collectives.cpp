// C entry points of the data-movement collectives and point-to-point
// messages. Each is: find the communicator's state (its rank and size are
// the call's), describe the call, run it over the state's transport
// (core/collectives.hpp).
#include "../core/collectives.hpp"

#include "../core/comm.hpp"
#include "../core/runtime.hpp"
#include "entry.hpp"
#include "guard.hpp"

namespace bagua {
namespace {

// Runs body(c) on comm's state, held for this call.
template <class Body>
Status on_comm(MPI_Comm comm, Body body) {
  BAGUA_TRY(runtime_ensure());
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  const ExclusiveUse use(*c);
  BAGUA_TRY(use.status());
  BAGUA_TRY(c->check_usable());
  return body(*c);
}

Status reduce_scatter(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                      MPI_Op op, Wire wire, MPI_Comm comm) {
  return on_comm(comm, [&](Communicator &c) {
    MovementCall call;
    BAGUA_TRY(
        describe_reduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, wire, c.size(), &call));
    return run_movement(c, call);
  });
}

Status exchange(Movement kind, const MovementArgs &args, MPI_Comm comm) {
  return on_comm(comm, [&](Communicator &c) {
    MovementCall call;
    BAGUA_TRY(describe_exchange(kind, args, c.rank(), c.size(), &call));
    return run_movement(c, call);
  });
}

}  // namespace
}  // namespace bagua

using bagua::Communicator;
using bagua::Movement;
using bagua::MovementCall;

extern "C" int bagua_barrier(MPI_Comm comm) {
  return bagua::guard("bagua_barrier", [&] {
    return bagua::on_comm(comm, [](Communicator &c) {
      return bagua::run_movement(c, MovementCall{Movement::barrier, nullptr, nullptr, 0, 0, -1});
    });
  });
}

extern "C" int bagua_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return bagua::guard("bagua_bcast", [&] {
    return bagua::on_comm(comm, [&](Communicator &c) {
      MovementCall call;
      BAGUA_TRY(bagua::describe_bcast(buf, count, datatype, root, c.size(), &call));
      return bagua::run_movement(c, call);
    });
  });
}

extern "C" int bagua_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return bagua::guard("bagua_allgather", [&] {
    return bagua::exchange(Movement::allgather,
                           {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1}, comm);
  });
}

extern "C" int bagua_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm) {
  return bagua::guard("bagua_gather", [&] {
    return bagua::exchange(
        Movement::gather, {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root}, comm);
  });
}

extern "C" int bagua_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm) {
  return bagua::guard("bagua_scatter", [&] {
    return bagua::exchange(Movement::scatter,
                           {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root},
                           comm);
  });
}

extern "C" int bagua_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return bagua::guard("bagua_alltoall", [&] {
    return bagua::exchange(Movement::alltoall,
                           {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, -1}, comm);
  });
}

extern "C" int bagua_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_reduce_scatter_block", [&] {
    return bagua::reduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, bagua::Wire::exact,
                                 comm);
  });
}

extern "C" int bagua_reduce_scatter_block_alg(const void *sendbuf, void *recvbuf, int recvcount,
                                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                              bagua_algorithm algorithm) {
  return bagua::guard("bagua_reduce_scatter_block_alg", [&] {
    bagua::Wire wire = bagua::Wire::exact;
    BAGUA_TRY(bagua::wire_from_c(algorithm, &wire));
    return bagua::reduce_scatter(sendbuf, recvbuf, recvcount, datatype, op, wire, comm);
  });
}

extern "C" int bagua_send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm) {
  return bagua::guard("bagua_send", [&] {
    return bagua::on_comm(comm, [&](Communicator &c) {
      return bagua::send_message(c, buf, count, datatype, dest, tag);
    });
  });
}

extern "C" int bagua_recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm) {
  return bagua::guard("bagua_recv", [&] {
    return bagua::on_comm(comm, [&](Communicator &c) {
      return bagua::recv_message(c, buf, count, datatype, source, tag);
    });
  });
}
