"""DDP communication hooks: DDP keeps bucketing, overlap, no_sync and unused-parameter handling;
bagua replaces the allreduce of each bucket."""
import torch
import torch.distributed as dist

from . import _C, runtime

ALGORITHMS = ("exact", "q8", "fp16", "bf16", "sign")


class HookState:
    """The state of allreduce_hook: the algorithm, a private duplicate of `comm` (default
    MPI_COMM_WORLD; it must hold the DDP group's ranks in the same order) and a worker thread
    that runs the buckets' allreduces in DDP's order. For "sign", one error-feedback state per
    bucket, made again when DDP rebuilds its buckets. Collective to create."""

    def __init__(self, algorithm="exact", comm=None):
        self.algorithm = algorithm
        self.comm = runtime.private_comm(comm)
        self._runner = _C.HookRunner(self.comm, algorithm)
        self._sign_states = {}  # bucket index -> (its parameters' ids, SignState)
        runtime.close_at_exit(self)

    def submit(self, bucket):
        """Queues the bucket's allreduce (average) and returns its torch.futures.Future, completed
        by the worker thread with the averaged buffer."""
        buffer = bucket.buffer()
        sign_state = self._sign_state(bucket, buffer) if self.algorithm == "sign" else None
        future = torch.futures.Future()
        self._runner.submit(buffer, future, sign_state)
        return future

    def _sign_state(self, bucket, buffer):
        key = tuple(id(p) for p in bucket.parameters())
        known = self._sign_states.get(bucket.index())
        if known is None or known[0] != key or known[1].count != buffer.numel():
            known = (key, _C.SignState(buffer.numel(), self.comm))
            self._sign_states[bucket.index()] = known
        return known[1]

    @property
    def bytes_sent(self):
        """Bytes this rank has sent for the buckets so far (bagua_allreduce_bytes of each)."""
        return self._runner.bytes_sent

    def close(self):
        """Finishes the queued buckets and stops the worker (also done at exit)."""
        self._runner.stop()


def allreduce_hook(state, bucket):
    """The DDP communication hook: ddp.register_comm_hook(HookState("q8"), allreduce_hook)."""
    return state.submit(bucket)


def register(ddp, algorithm="exact", comm=None):
    """Registers allreduce_hook with a new HookState(algorithm, comm) on `ddp` (a
    DistributedDataParallel); returns the state. comm=None: the ranks of DDP's process group
    (torch's ranks are MPI's, as bagua_torch.init() makes them)."""
    if not isinstance(ddp, torch.nn.parallel.DistributedDataParallel):
        raise TypeError(f"expected a DistributedDataParallel, not {type(ddp).__name__}")
    if comm is None:
        comm = _group_comm(dist.get_process_group_ranks(ddp.process_group))
    state = HookState(algorithm, comm)
    if state.comm.size != ddp.process_group.size():
        raise ValueError(f"the communicator has {state.comm.size} ranks, the DDP process group "
                         f"{ddp.process_group.size()}")
    ddp.register_comm_hook(state, allreduce_hook)
    return state


def _group_comm(ranks):
    """None (MPI_COMM_WORLD) for all ranks in order, else a communicator of `ranks` (collective
    over them)."""
    runtime.ensure_mpi()
    world = _C.Comm.world()
    return None if ranks == list(range(world.size)) else world.create_group(ranks)
