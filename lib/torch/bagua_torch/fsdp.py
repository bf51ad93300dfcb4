"""FSDP2 with a relaxed gradient reduce-scatter: relax_reduce_scatter(model, "q8")."""
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FSDPModule
from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter

from . import ops, runtime
from . import _C

#The algorithms RelaxedReduceScatter takes : those the library lists without state.
REDUCE_SCATTER_ALGORITHMS = tuple(_C.algorithms(with_state=False))


class RelaxedReduceScatter(ReduceScatter):
    """FSDP2's gradient reduce-scatter through bagua_reduce_scatter_block_alg of `algorithm`
    (any the library lists without state: REDUCE_SCATTER_ALGORITHMS): each rank encodes the
    other ranks' shards of its gradient once and sends each to its owner, which adds them to its
    own exact shard in float32. The wire carries (n - 1) / n of the gradient in the algorithm's
    format, so an 8-bit wire moves a quarter of the bytes of an exact float32 reduce-scatter and
    a 4-bit one an eighth. No error feedback. Its communicator (a private one of the group's
    ranks) is made on the first call, which is collective."""

    def __init__(self, algorithm="q8"):
        choices = REDUCE_SCATTER_ALGORITHMS
        if algorithm not in choices:
            raise ValueError(f"unknown algorithm '{algorithm}' for the reduce-scatter: choose one "
                             f"of {', '.join(choices)}")
        self.algorithm = algorithm
        self._comms = {}  # group -> bagua communicator of its ranks

    def allocate(self, size, *, dtype, device):
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, op, async_op=False):
        if op not in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
            raise ValueError(f"the relaxed reduce-scatter sums or averages, not {op}")
        ops.reduce_scatter_(output_tensor, input_tensor, self.algorithm,
                            average=op == dist.ReduceOp.AVG, comm=self._comm_of(group))
        return None

    def _comm_of(self, group):
        if group not in self._comms:
#Collective over the group's ranks only.
            self._comms[group] = runtime.group_comm(dist.get_process_group_ranks(group))
        return self._comms[group]


def relax_reduce_scatter(model, algorithm="q8"):
    """Makes every FSDP2 module of `model` (fully_shard) reduce-scatter its gradients with
    RelaxedReduceScatter(algorithm); returns that object."""
    comm = RelaxedReduceScatter(algorithm)
    modules = [m for m in model.modules() if isinstance(m, FSDPModule)]
    if not modules:
        raise TypeError("relax_reduce_scatter needs a model sharded with fully_shard (FSDP2)")
    for module in modules:
        module.set_custom_reduce_scatter(comm)
    return comm
