/* A minimal PMPI tool for the stacking test: counts the MPI_Allreduce and
 * MPI_Iallreduce calls that reach it and prints the count at MPI_Finalize.
 * Preloaded after libbagua-pmpi (LD_PRELOAD=libbagua-pmpi.so:this), it must
 * see exactly the calls the interposer passes through. */
#include <mpi.h>
#include <stdio.h>

static long calls;

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
  __atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED);
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

int MPI_Finalize(void) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  printf("pmpi-count-tool: rank %d saw %ld\n", rank, calls);
  fflush(stdout);
  return PMPI_Finalize();
}
