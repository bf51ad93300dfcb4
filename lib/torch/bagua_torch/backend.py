"""The c10d backend "bagua": torch.distributed.init_process_group("bagua"),
new_group(backend="bagua") or a per-device map such as "cpu:bagua"."""
import os

import torch.distributed as dist

from . import _C, runtime


class ProcessGroupOptions:
    """pg_options of a "bagua" group: the wire of its floating-point sum allreduces (any of
    _C.algorithms(with_state=False); None: BAGUA_TORCH_ALGORITHM, default exact)."""

    def __init__(self, algorithm=None):
        self.algorithm = algorithm


def _create(backend_options, pg_options):
    """c10d's creator (extended API): a communicator with the group's ranks, in their order, and
    a second one for send and recv: MPI's, or under torchrun formed through the group's store."""
    algorithm = (getattr(pg_options, "algorithm", None)
                 or os.environ.get("BAGUA_TORCH_ALGORITHM") or "exact")
    if runtime.launched_without_mpi():  # torchrun: formed through the group's own store
        store, rank, size = (backend_options.store, backend_options.group_rank,
                             backend_options.group_size)
        return _C.Backend(runtime.store_comm(store, rank, size, "backend"),
                          runtime.store_comm(store, rank, size, "messages"), algorithm)
    world = _C.Comm.world()
    ranks = list(backend_options.global_ranks_in_group)
    if dist.is_initialized() and dist.get_rank() != world.rank:
        raise ValueError(f"torch.distributed rank {dist.get_rank()} is MPI rank {world.rank}: "
                         "initialise with bagua_torch.init() so that they agree")
    comm = world.create_group(ranks) if ranks else world.dup()
    if comm.rank != backend_options.group_rank or comm.size != backend_options.group_size:
        raise ValueError(f"torch.distributed rank {backend_options.group_rank} of "
                         f"{backend_options.group_size} is MPI rank {comm.rank} of {comm.size}: "
                         "initialise with bagua_torch.init() so that they agree")
    messages = world.create_group(ranks) if ranks else world.dup()  # send and recv
    return _C.Backend(comm, messages, algorithm)


def register_backend():
    """Registers "bagua" with torch.distributed for CPU tensors (done on import)."""
    if "bagua" not in dist.Backend.backend_list:
        dist.Backend.register_backend("bagua", _create, extended_api=True, devices=["cpu"])
