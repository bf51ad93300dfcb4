"""Checks that record failures instead of raising, so the ranks of an mpirun test carry on in
step (a rank that raised would leave the others waiting in a collective)."""
import sys

import torch
import torch.distributed as dist

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"rank {dist.get_rank()}: FAILED: {what}", flush=True)


def raises(kind, call, text=""):
    """True if call() raises `kind` with `text` in its message."""
    try:
        call()
    except kind as e:
        return text in str(e)
    return False


def finish(name):
    """Prints the number of failed checks over all ranks and exits 1 if this rank failed one."""
    failed = torch.tensor([len(failures)])
    dist.all_reduce(failed)
    if dist.get_rank() == 0:
        print(f"{name} at {dist.get_world_size()} ranks: {failed.item()} failed checks", flush=True)
    sys.exit(1 if failures else 0)
