"""MPI and torch.distributed set-up, communicators, and the clean-up at exit.

Two launches: under mpirun or srun every rank is an MPI process and bagua's communicators are
MPI's (duplicates and subgroups of MPI_COMM_WORLD); under torchrun (or any launcher that sets
torch's RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT) each process is a one-rank MPI world of
its own and bagua forms its communicators through torch.distributed's store
(bagua_comm_create_oob)."""
import atexit
import collections
import datetime
import itertools
import os
import socket
import sys
import traceback
import weakref

import torch.distributed as dist

from . import _C

_owns = {"mpi": False, "process_group": False, "exit_handler": False}
_default_comm = []  # the communicator of plain calls with comm=None, made on first use
# Store-formed communicators made so far per tuple of ranks: members make them in the same order,
# so the count names each one's keys alike on every member.
_store_comms = collections.defaultdict(itertools.count)
# Weak references to the objects whose close() must run before MPI_Finalize, in creation
# order: creation is collective, so every rank closes them in the same order.
_closables = []


def init(backend=None, timeout=datetime.timedelta(minutes=30)):
    """Initialises MPI (MPI_THREAD_MULTIPLE) unless something already did (mpi4py counts), and
    torch.distributed unless it is initialised: rank and size from MPI_COMM_WORLD, a TCPStore on
    rank 0 whose address is broadcast over MPI, `backend` (default BAGUA_TORCH_BACKEND, gloo).
    Finalises at exit only what it initialised. Returns (rank, size)."""
    ensure_mpi()
    if launched_without_mpi():
        if not dist.is_initialized():
            dist.init_process_group(backend or os.environ.get("BAGUA_TORCH_BACKEND") or "gloo",
                                    init_method="env://", timeout=timeout)
            _owns["process_group"] = True
        return dist.get_rank(), dist.get_world_size()
    world = _C.Comm.world()
    if not dist.is_initialized():
        backend = backend or os.environ.get("BAGUA_TORCH_BACKEND") or "gloo"
        store = _rendezvous(world, timeout)
        dist.init_process_group(backend, store=store, rank=world.rank, world_size=world.size,
                                timeout=timeout)
        _owns["process_group"] = True
    elif dist.get_rank() != world.rank or dist.get_world_size() != world.size:
        raise ValueError(f"torch.distributed's rank {dist.get_rank()} of {dist.get_world_size()} "
                         f"is MPI rank {world.rank} of {world.size}: bagua needs them equal")
    sys.excepthook = _abort_on_exception
    return world.rank, world.size


def launched_without_mpi():
    """True when torch's environment names a group of several processes and MPI's world is this
    process alone (torchrun): bagua then forms its communicators through torch's store."""
    ensure_mpi()
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and _C.Comm.world().size == 1


def store_comm(store, rank, size, name):
    """A communicator of `size` ranks formed through `store` (collective over them; every rank
    passes the same name, whose count of uses so far tells this one's keys apart)."""
    return _C.Comm.from_store(store, rank, size, f"bagua/{name}/{next(_store_comms[name])}")


def group_comm(ranks=None):
    """A new communicator of `ranks` (torch's global ranks, in that order; None: every rank),
    collective over them: MPI's, or under torchrun one formed through torch's store."""
    ensure_mpi()
    if launched_without_mpi():
        if not dist.is_initialized():
            raise ValueError("under torchrun, bagua needs torch.distributed initialised first "
                             "(bagua_torch.init() or init_process_group)")
        ranks = list(range(dist.get_world_size())) if ranks is None else list(ranks)
        return store_comm(dist.distributed_c10d._get_default_store(),
                          ranks.index(dist.get_rank()), len(ranks), "-".join(map(str, ranks)))
    world = _C.Comm.world()
    return world.dup() if ranks is None else world.create_group(list(ranks))


def ensure_mpi():
    """Initialises MPI if nobody has, and registers shutdown() to run at exit (before mpi4py's
    MPI_Finalize, if mpi4py initialised MPI)."""
    if _C.mpi_init():
        _owns["mpi"] = True
    if not _owns["exit_handler"]:
        _owns["exit_handler"] = True
        atexit.register(shutdown)


def shutdown():
    """Closes hook workers and averagers, destroys the process group if bagua_torch created
    it, releases bagua's state on every communicator (bagua_finalize, which MPICH needs before
    MPI_Finalize) and finalises MPI if bagua_torch initialised it. Runs at exit; calling it
    earlier is allowed (once)."""
    for reference in _closables:
        closable = reference()
        if closable is not None:
            closable.close()
    _closables.clear()
    if _owns["process_group"] and dist.is_initialized():
        dist.destroy_process_group()
        _owns["process_group"] = False
    for comm in _default_comm:
        comm.free()
    _default_comm.clear()
    _C.finalize()
    if _owns["mpi"]:
        _owns["mpi"] = False
        _C.mpi_finalize()


def _abort_on_exception(kind, value, trace):
    """An uncaught exception on one rank aborts the job instead of leaving the other ranks
    waiting for it in a collective."""
    traceback.print_exception(kind, value, trace)
    sys.stderr.flush()
    _C.mpi_abort(1)


def _rendezvous(world, timeout):
    """A TCPStore on rank 0 (free port), its address broadcast to the others over MPI."""
    if world.rank == 0:
        host = os.environ.get("BAGUA_TORCH_MASTER_ADDR") or socket.gethostname()
        store = dist.TCPStore(host, 0, world.size, True, timeout, wait_for_workers=False)
        address = f"{host}:{store.port}"
    else:
        address = ""
    address = _C.broadcast_bytes(world, address, 0).decode()
    if world.rank != 0:
        host, port = address.rsplit(":", 1)
        store = dist.TCPStore(host, int(port), world.size, False, timeout)
    return store


def as_comm(comm=None):
    """A _C.Comm from None (bagua_torch's duplicate of MPI_COMM_WORLD, made collectively on first
    use), a _C.Comm, a Fortran handle, or an mpi4py communicator."""
    ensure_mpi()
    if comm is None:
        if not _default_comm:
            _default_comm.append(group_comm())
        return _default_comm[0]
    if isinstance(comm, _C.Comm):
        return comm
    if isinstance(comm, int):
        return _C.Comm.from_fortran(comm)
    if hasattr(comm, "py2f"):
        return _C.Comm.from_fortran(comm.py2f())
    raise TypeError(f"comm must be None, an mpi4py communicator or a Fortran handle, not "
                    f"{type(comm).__name__}")


def private_comm(comm=None):
    """A duplicate of `comm` (default: every rank) for one object's own traffic (collective)."""
    ensure_mpi()
    if comm is None:
        return group_comm()
    return as_comm(comm).dup()


def close_at_exit(closable):
    """Has shutdown() call closable.close() before MPI_Finalize (if it is still alive)."""
    _closables.append(weakref.ref(closable))
