// The language-independent core of libbagua-pmpi: the C entry points
// (interposer.cpp) and the Fortran ones (fortran.cpp) convert their arguments
// and call these. Arguments and return values are those of the C MPI calls.
#pragma once

#include <mpi.h>

// Symbols the interposer defines for the program; everything else is hidden.
#define BAGUA_PMPI_EXPORT __attribute__((visibility("default")))

namespace bagua::pmpi {

// MPI_Init_thread, raising `required` to MPI_THREAD_MULTIPLE when the mode
// routes MPI_Iallreduce; then reads and checks the settings (collective over
// MPI_COMM_WORLD).
int init_thread(int *argc, char ***argv, int required, int *provided);
// MPI_Init: as init_thread when the thread level must be raised, otherwise
// PMPI_Init.
int init(int *argc, char ***argv);

// MPI_Allreduce: routed to bagua or passed to PMPI_Allreduce.
int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm);
// MPI_Iallreduce: routed to bagua's nonblocking calls or to PMPI_Iallreduce.
int iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm, MPI_Request *request);

}  // namespace bagua::pmpi
