"""Plain tensor collectives, for custom training loops. Each is collective over `comm` (None:
bagua_torch's duplicate of MPI_COMM_WORLD) and works in place on a contiguous CPU tensor."""
import torch

from . import _C, runtime


def _tensor(tensor):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, not {type(tensor).__name__}")
    return tensor.detach()


def SignState(count, comm=None):
    """The error-feedback state of algorithm="sign" for one buffer of `count` elements on
    `comm` (keep it across iterations; one per buffer)."""
    return _C.SignState(count, runtime.as_comm(comm))


def allreduce_(tensor, algorithm="exact", average=True, comm=None, state=None):
    """Allreduce in place with `algorithm` (any of bagua_torch.ALGORITHMS; those with state, sign,
    need state=SignState),
    averaging (BAGUA_AVG) or summing. Every rank gets bit-identical results. Returns tensor."""
    _C.allreduce_(_tensor(tensor), algorithm, average, runtime.as_comm(comm), state)
    return tensor


def reduce_scatter_(output, input, algorithm="exact", average=True, comm=None):
    """bagua_reduce_scatter_block_alg: `output` (one shard) receives this rank's shard of the sum
    (or average) of every rank's `input` (the group's size times output's elements, one dtype).
    A compressed algorithm encodes each rank's shards once, for their owners, and adds them in
    float32: one encoding, none of the result. Any of bagua_torch.ALGORITHMS without state.
    Returns output."""
    _C.reduce_scatter_(_tensor(output), _tensor(input), algorithm, average,
                       runtime.as_comm(comm))
    return output


def broadcast_(tensor, root=0, comm=None):
    """bagua_bcast of the tensor's bytes from `root`. Returns tensor."""
    _C.broadcast_(_tensor(tensor), root, runtime.as_comm(comm))
    return tensor


def decentralized_average_(tensor, mode="all", step=0, interval=1, comm=None):
    """bagua_decentralized_average in place: mode all, shift_one or ring; communicates when
    step % interval == 0. Returns tensor."""
    _C.decentralized_average_(_tensor(tensor), mode, step, interval, runtime.as_comm(comm))
    return tensor


def partial_average_(tensor, group_size=0, comm=None):
    """bagua_partial_reduce in place: averages with the first `group_size` ranks that are ready
    (0: BAGUA_PARTIAL_GROUP_SIZE). Not collective after the first call. Returns the group as a
    dict: group_id, size, bridging, members, weights, staleness."""
    return _C.partial_average_(_tensor(tensor), group_size, runtime.as_comm(comm))
