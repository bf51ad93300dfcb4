#!/usr/bin/python3
"""An unmodified mpi4py + numpy program for libbagua-pmpi's tests (the worked
example of doc/pmpi.md does the same). mpi4py's Allreduce is the C
MPI_Allreduce, so the interposer routes it. Inputs are small integers with
closed-form sums: exact mode must match them exactly, q8 / fp16 within the
documented bound; every rank must get the same bits. Prints how many calls
the interposer should route (run_pmpi.py compares with its summary).

usage: pmpi_mpi4py.py MODE MIN_COUNT
"""
import sys

import numpy as np
from mpi4py import MPI

N = 3001


def main():
    mode, min_count = sys.argv[1], int(sys.argv[2])
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    index = np.arange(N)
    x = ((index * 7 + rank * 13) % 31 - 15).astype(np.float32)
    want = sum(((index * 7 + r * 13) % 31 - 15) for r in range(size)).astype(np.float64)
    bound = {"exact": 0.0, "off": 0.0, "q8": (2 * size - 1) * 30 / 510 + 1e-4,
             "fp16": 2.0**-10 * 30 * size + 1e-4}.get(mode, np.inf)
    failures, routed = [], 0

    def check(what, got, tolerance):
        error = np.max(np.abs(got.astype(np.float64) - want[:got.size]))
        if not error <= tolerance:
            failures.append("%s: error %g above %g" % (what, error, tolerance))
        root = comm.bcast(got if rank == 0 else None, root=0)
        if root.tobytes() != got.tobytes():
            failures.append("%s: ranks differ" % what)

    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    routed += mode != "off"
    check("float32 sum", y, bound)

    z = x.copy()
    comm.Allreduce(MPI.IN_PLACE, z, op=MPI.SUM)
    routed += mode != "off"
    check("float32 sum in place", z, bound)

    d = x.astype(np.float64)
    comm.Allreduce(MPI.IN_PLACE, d, op=MPI.SUM)
    routed += mode == "exact"
    check("float64 sum", d, 0.0 if mode in ("exact", "off") else bound)

    i = x.astype(np.int32)
    comm.Allreduce(MPI.IN_PLACE, i, op=MPI.SUM)
    check("int32 sum (passed through)", i, 0.0)

    small = x[:min_count - 1].copy()
    comm.Allreduce(MPI.IN_PLACE, small, op=MPI.SUM)
    check("below the minimum count (passed through)", small, 0.0)

    w = np.empty_like(x)
    comm.Iallreduce(x, w, op=MPI.SUM).Wait()
    routed += mode in ("exact", "q8") and MPI.Query_thread() == MPI.THREAD_MULTIPLE
    check("Iallreduce", w, bound)

    for failure in failures:
        print("pmpi_mpi4py: rank %d: FAIL: %s" % (rank, failure), flush=True)
    print("pmpi-test: rank %d expects routed %d failures %d" % (rank, routed, len(failures)),
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
