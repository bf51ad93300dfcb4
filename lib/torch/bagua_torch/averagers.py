"""Model averagers: the relaxed algorithms that average weights instead of gradients. The
synchronous ones follow torch's ModelAverager (average_parameters(params) with model.parameters()
or optimizer.param_groups, a `step` count), so they plug into PostLocalSGDOptimizer. Creating one
is collective (each duplicates its communicator, default MPI_COMM_WORLD)."""
import contextlib

import torch
from torch.distributed.algorithms.model_averaging import utils as averaging_utils
from torch.distributed.algorithms.model_averaging.averagers import ModelAverager

from . import _C, runtime

ASYNC_DEFAULT_INTERVAL_MS = 500


def _average_in_place(params, average_, allow_double=True):
    """Copies the parameters into one flat buffer (float64 if any is and allow_double, else
    float32), has average_ change it in place, and copies the result back. One buffer per call,
    so the ranks' calls pair up even when parameters have several dtypes."""
    if not params:
        return None
    double = allow_double and any(p.dtype == torch.float64 for p in params)
    with torch.no_grad():
        flat = torch.cat([p.detach().reshape(-1).to(torch.float64 if double else torch.float32)
                          for p in params])
        result = average_(flat)
        offset = 0
        for p in params:
            p.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()
    return result


class _PeriodicAverager(ModelAverager):
    """Averages every `period` steps after `warmup_steps` (as PeriodicModelAverager)."""

    def __init__(self, period, warmup_steps, comm):
        super().__init__(process_group=None)
        if period < 1 or warmup_steps < 0:
            raise ValueError("period must be >= 1 and warmup_steps >= 0")
        self.period = period
        self.warmup_steps = warmup_steps
        self.comm = runtime.private_comm(comm)

    def average_parameters(self, params):
        due = self.step >= self.warmup_steps and (self.step - self.warmup_steps) % self.period == 0
        if due:
            self._average(averaging_utils.get_params_to_average(params),
                          (self.step - self.warmup_steps) // self.period)
        self.step += 1

    def _average(self, params, round_):
        raise NotImplementedError


class DecentralizedAverager(_PeriodicAverager):
    """bagua_decentralized_average: mode "all" (exact average), "shift_one" (one partner per
    round) or "ring" (both neighbours)."""

    def __init__(self, mode="shift_one", period=1, warmup_steps=0, comm=None):
        if mode not in ("all", "shift_one", "ring"):
            raise ValueError(f"unknown mode {mode!r}: choose all, shift_one or ring")
        super().__init__(period, warmup_steps, comm)
        self.mode = mode

    def _average(self, params, round_):
        _average_in_place(
            params, lambda flat: _C.decentralized_average_(flat, self.mode, round_, 1, self.comm))


class LowPrecisionDecentralizedAverager(_PeriodicAverager):
    """bagua_lowprec_*: q8-compressed ring averaging with replicas of the neighbours' weights.
    The parameters averaged must stay the same (their number of elements)."""

    def __init__(self, period=1, warmup_steps=0, comm=None):
        super().__init__(period, warmup_steps, comm)
        self._state = None

    def _average(self, params, round_):
        _average_in_place(params, self._step, allow_double=False)

    def _step(self, flat):
        if self._state is None:  # exchanges the first weights exactly (collective)
            self._state = _C.LowPrecisionState(flat, 1, self.comm)
        self._state.step(flat)

    def close(self):
        if self._state is not None:
            self._state.close()


class PartialAverager(_PeriodicAverager):
    """bagua_partial_reduce: each averaging step joins the first `group_size` ranks that are
    ready (0: BAGUA_PARTIAL_GROUP_SIZE, default half the ranks). `last_group` describes the
    latest group. Call leave() before anything other ranks must not wait for (evaluation, the
    end of training)."""

    def __init__(self, group_size=0, period=1, warmup_steps=0, comm=None):
        super().__init__(period, warmup_steps, comm)
        self.group_size = group_size
        self.last_group = None

    def _average(self, params, round_):
        self.last_group = _average_in_place(
            params, lambda flat: _C.partial_average_(flat, self.group_size, self.comm))

    def leave(self):
        _C.partial_leave(self.comm)


class AsyncAverager:
    """bagua_async_average_*: a background thread averages `module`'s parameters with all ranks
    every `interval_ms` while training continues. The parameters are moved into one flat buffer
    per dtype (p.data becomes a view of it). Bracket the optimizer step with lock()/unlock() or
    `with averager.locked():`. stop() and resume() are collective; the averager closes at exit."""

    def __init__(self, module, interval_ms=ASYNC_DEFAULT_INTERVAL_MS, comm=None):
        self.comm = runtime.private_comm(comm)
        self._averages = []
        by_dtype = {}
        for p in module.parameters():
            by_dtype.setdefault(p.dtype, []).append(p)
        with torch.no_grad():
            for params in by_dtype.values():
                flat = torch.cat([p.detach().reshape(-1) for p in params])
                offset = 0
                for p in params:
                    p.data = flat[offset:offset + p.numel()].view_as(p)
                    offset += p.numel()
                self._averages.append(_C.AsyncAverage(flat, interval_ms, self.comm))
        runtime.close_at_exit(self)

    def lock(self):
        for average in self._averages:
            average.lock()

    def unlock(self):
        for average in reversed(self._averages):
            average.unlock()

    @contextlib.contextmanager
    def locked(self):
        self.lock()
        try:
            yield self
        finally:
            self.unlock()

    def stop(self):
        for average in self._averages:
            average.abort()

    def resume(self):
        for average in self._averages:
            average.resume()

    @property
    def rounds(self):
        """Rounds applied so far (the fewest over the dtypes' buffers)."""
        return min((average.rounds for average in self._averages), default=0)

    def close(self):
        for average in self._averages:
            average.close()
