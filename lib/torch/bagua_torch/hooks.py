"""DDP communication hooks: DDP keeps bucketing, overlap, no_sync and unused-parameter handling;
bagua replaces the allreduce of each bucket."""
import torch
import torch.distributed as dist

from . import _C, runtime

# Every algorithm the library lists (bagua_algorithm_name): a wire added there is one here.
ALGORITHMS = tuple(_C.algorithms())


class HookState:
    """The state of allreduce_hook: the algorithm, a communicator of its own (a duplicate of
    `comm`, an MPI communicator, or else one of `ranks`, torch's global ranks, None: every rank;
    it must hold the DDP group's ranks in the same order) and a runner that starts each bucket's
    allreduce as a nonblocking bagua call and completes the buckets' futures in DDP's order.
    Collective to create.

    For "sign", 1-bit SGD with momentum (the scheme of 1-bit Adam): one error-feedback state and
    one momentum buffer m per bucket, with the bucket's elements in the model's parameter order
    (so a bucket of the same parameters keeps them when DDP rebuilds its buckets; saved and
    restored by state_dict() / load_state_dict()). Each
    step the hook forms m = momentum * m + g from the bucket's gradient g, sign-allreduces m
    (1 bit per element and error feedback), keeps the average as every rank's m and returns
    it: the hook is the momentum, so use it with an optimizer without momentum
    (torch.optim.SGD(momentum=0)). momentum=0: the hook sign-averages the gradient itself."""

    def __init__(self, algorithm="exact", comm=None, momentum=0.9, ranks=None):
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), not {momentum}")
        self.algorithm = algorithm
        self.momentum = float(momentum)
        # A communicator of its own: a duplicate of `comm`, or one of `ranks` (None: every rank).
        self.comm = runtime.private_comm(comm) if comm is not None else runtime.group_comm(ranks)
        self._runner = _C.HookRunner(self.comm, algorithm)
        self._layouts = {}  # bucket index -> (its parameters' ids, members, permutation)
        self._sign_states = {}  # members -> (SignState, m or None)
        self._loaded = {}  # members -> a bucket's state from load_state_dict, until it is used
        self.model_parameters = None  # the DDP model's, set by register()
        runtime.close_at_exit(self)

    def submit(self, bucket):
        """Queues the bucket's allreduce (average) and returns its torch.futures.Future, completed
        in DDP's order with the averaged buffer (for "sign", the averaged momentum)."""
        buffer = bucket.buffer()
        if self.algorithm != "sign":
            future = torch.futures.Future()
            self._runner.submit(buffer, future, None)
            return future
        members, permutation = self._layout(bucket)
        sign_state, momentum = self._sign_state(members, buffer)
        ordered = buffer if permutation is None else buffer.index_select(0, permutation)
        if momentum is not None:
            # m holds the last average (the same on every rank); the allreduce runs in place in
            # m, so the future's value is m and DDP copies it to the gradients.
            ordered = momentum.mul_(self.momentum).add_(ordered)
        future = torch.futures.Future()
        self._runner.submit(ordered, future, sign_state)
        if permutation is None:
            return future
        return future.then(
            lambda done: torch.empty_like(buffer).index_copy_(0, permutation, done.value()))

    def _layout(self, bucket):
        """The bucket's members (its parameters' indices in the model, sorted: the order the sign
        state keeps its elements in, whatever DDP's bucket order) and the element permutation
        from the bucket's order to that one (None: the same)."""
        parameters = bucket.parameters()
        key = tuple(id(p) for p in parameters)
        known = self._layouts.get(bucket.index())
        if known is None or known[0] != key:
            index = ({id(p): i for i, p in enumerate(self.model_parameters)}
                     if self.model_parameters is not None else {k: k for k in key})
            order = sorted(range(len(parameters)), key=lambda i: index[key[i]])
            offsets = [0]
            for p in parameters:
                offsets.append(offsets[-1] + p.numel())
            permutation = None
            if order != list(range(len(parameters))):
                permutation = torch.cat([torch.arange(offsets[i], offsets[i + 1])
                                         for i in order])
            known = (key, tuple(index[key[i]] for i in order), permutation)
            self._layouts[bucket.index()] = known
            current = {layout[1] for layout in self._layouts.values()}
            for stale in [m for m in self._sign_states if m not in current]:
                del self._sign_states[stale]
        return known[1], known[2]

    def _sign_state(self, members, buffer):
        """The SignState and momentum of the parameters `members`: kept while they share a bucket
        (across DDP's rebuilds), from load_state_dict, or new (zero)."""
        if members not in self._sign_states:
            sign_state = _C.SignState(buffer.numel(), self.comm)
            momentum = torch.zeros_like(buffer) if self.momentum > 0 else None
            saved = self._loaded.pop(members, None)
            if saved is not None and saved["residuals"].numel() == 2 * buffer.numel():
                sign_state.load_residuals(saved["residuals"])
                if momentum is not None and saved["momentum"] is not None:
                    momentum.copy_(saved["momentum"])
            self._sign_states[members] = (sign_state, momentum)
        return self._sign_states[members]

    def state_dict(self):
        """The hook's state for a checkpoint (torch.save, torch.distributed.checkpoint): for
        "sign", each bucket's error-feedback residuals and momentum, keyed by its parameters'
        indices in the model; the other algorithms keep none. Each rank's differs: save each."""
        buckets = [{"members": list(members), "residuals": sign_state.residuals(),
                    "momentum": None if momentum is None else momentum.clone()}
                   for members, (sign_state, momentum) in self._sign_states.items()]
        return {"algorithm": self.algorithm, "momentum": self.momentum, "buckets": buckets}

    def load_state_dict(self, state_dict):
        """Restores state_dict()'s state into a hook registered on the same model: a bucket of
        the same parameters takes it when DDP next hands it over."""
        if state_dict["algorithm"] != self.algorithm:
            raise ValueError(f"the state is a {state_dict['algorithm']} hook's, this hook is "
                             f"{self.algorithm}")
        self.momentum = float(state_dict["momentum"])
        self._sign_states.clear()
        self._loaded = {tuple(b["members"]): b for b in state_dict["buckets"]}

    @property
    def bytes_sent(self):
        """Bytes this rank has sent for the buckets so far (bagua_allreduce_bytes of each)."""
        return self._runner.bytes_sent

    def close(self):
        """Finishes the buckets in flight and stops the completion thread (also done at exit)."""
        self._runner.stop()


def allreduce_hook(state, bucket):
    """The DDP communication hook: ddp.register_comm_hook(HookState("q8"), allreduce_hook)."""
    return state.submit(bucket)


def register(ddp, algorithm="exact", comm=None, momentum=0.9):
    """Registers allreduce_hook with a new HookState(algorithm, comm, momentum) on `ddp` (a
    DistributedDataParallel); returns the state. comm=None: the ranks of DDP's process group
    (under mpirun torch's ranks are MPI's, as bagua_torch.init() makes them). momentum: the sign hook's (see
    HookState; build the optimizer without momentum)."""
    if not isinstance(ddp, torch.nn.parallel.DistributedDataParallel):
        raise TypeError(f"expected a DistributedDataParallel, not {type(ddp).__name__}")
    ranks = dist.get_process_group_ranks(ddp.process_group) if comm is None else None
    state = HookState(algorithm, comm, momentum, ranks)
    state.model_parameters = list(ddp.module.parameters())
    if state.comm.size != ddp.process_group.size():
        raise ValueError(f"the communicator has {state.comm.size} ranks, the DDP process group "
                         f"{ddp.process_group.size()}")
    ddp.register_comm_hook(state, allreduce_hook)
    return state
