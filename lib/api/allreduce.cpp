// C entry points of the exact collectives.
#include "../core/comm.hpp"
#include "guard.hpp"
#include "validate.hpp"

namespace bagua {
namespace {

Status choose_and_run(Communicator &comm, AlgoContext &ctx, const AllreduceArgs &args) {
  const size_t bytes = args.count * dtype_size(args.dtype);
  AllreduceAlgo algo = comm.options().allreduce_algo;
  if (algo == AllreduceAlgo::automatic)
    algo = bytes >= comm.options().ring_threshold_bytes ? AllreduceAlgo::ring
                                                        : AllreduceAlgo::recursive_doubling;
  return algo == AllreduceAlgo::ring ? allreduce_ring(ctx, args)
                                     : allreduce_recursive_doubling(ctx, args);
}

Status allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 MPI_Comm comm) {
  ReductionCall call;
  BAGUA_TRY(validate_reduction("bagua_allreduce", sendbuf, recvbuf, count, datatype, op, &call));
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(comm, &c));
  BAGUA_TRY(c->check_usable());
  AlgoContext ctx = c->next_call(Channel::allreduce);
  const AllreduceArgs args{call.src, call.dst, call.count, call.dtype, call.op};
  return c->finish_call(choose_and_run(*c, ctx, args));
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_allreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::guard("bagua_allreduce", [&] {
    return bagua::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
  });
}
