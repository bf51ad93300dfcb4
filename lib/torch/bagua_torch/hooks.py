"""DDP communication hooks: DDP keeps bucketing, overlap, no_sync and unused-parameter handling;
bagua replaces the allreduce of each bucket."""
import torch
import torch.distributed as dist

from . import _C, runtime

ALGORITHMS = ("exact", "q8", "q4", "fp16", "bf16", "sign")


class HookState:
    """The state of allreduce_hook: the algorithm, a private duplicate of `comm` (default
    MPI_COMM_WORLD; it must hold the DDP group's ranks in the same order) and a worker thread
    that runs the buckets' allreduces in DDP's order. Collective to create.

    For "sign", 1-bit SGD with momentum (the scheme of 1-bit Adam): one error-feedback state and
    one momentum buffer m per bucket, made again (m zero) when DDP rebuilds its buckets. Each
    step the hook forms m = momentum * m + g from the bucket's gradient g, sign-allreduces m
    (1 bit per element and error feedback), keeps the average as every rank's m and returns
    it: the hook is the momentum, so use it with an optimizer without momentum
    (torch.optim.SGD(momentum=0)). momentum=0: the hook sign-averages the gradient itself."""

    def __init__(self, algorithm="exact", comm=None, momentum=0.9):
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), not {momentum}")
        self.algorithm = algorithm
        self.momentum = float(momentum)
        self.comm = runtime.private_comm(comm)
        self._runner = _C.HookRunner(self.comm, algorithm)
        self._sign_states = {}  # bucket index -> (its parameters' ids, SignState, m or None)
        runtime.close_at_exit(self)

    def submit(self, bucket):
        """Queues the bucket's allreduce (average) and returns its torch.futures.Future, completed
        by the worker thread with the averaged buffer (for "sign", the averaged momentum)."""
        buffer = bucket.buffer()
        sign_state = None
        if self.algorithm == "sign":
            sign_state, momentum = self._sign_state(bucket, buffer)
            if momentum is not None:
                # m holds the last average (the same on every rank); the allreduce runs in place
                # in m, so the future's value is m and DDP copies it to the gradients.
                buffer = momentum.mul_(self.momentum).add_(buffer)
        future = torch.futures.Future()
        self._runner.submit(buffer, future, sign_state)
        return future

    def _sign_state(self, bucket, buffer):
        key = tuple(id(p) for p in bucket.parameters())
        known = self._sign_states.get(bucket.index())
        if known is None or known[0] != key or known[1].count != buffer.numel():
            momentum = torch.zeros_like(buffer) if self.momentum > 0 else None
            known = (key, _C.SignState(buffer.numel(), self.comm), momentum)
            self._sign_states[bucket.index()] = known
        return known[1], known[2]

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


def register(ddp, algorithm="exact", comm=None, momentum=0.9):
    """Registers allreduce_hook with a new HookState(algorithm, comm, momentum) on `ddp` (a
    DistributedDataParallel); returns the state. comm=None: the ranks of DDP's process group
    (torch's ranks are MPI's, as bagua_torch.init() makes them). momentum: the sign hook's (see
    HookState; build the optimizer without momentum)."""
    if not isinstance(ddp, torch.nn.parallel.DistributedDataParallel):
        raise TypeError(f"expected a DistributedDataParallel, not {type(ddp).__name__}")
    if comm is None:
        comm = _group_comm(dist.get_process_group_ranks(ddp.process_group))
    state = HookState(algorithm, comm, momentum)
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
