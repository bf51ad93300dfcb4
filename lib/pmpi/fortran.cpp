// The Fortran symbols of mpif.h / `use mpi` (Open MPI's Fortran bindings call
// PMPI_Allreduce directly, so the C symbols never see Fortran calls). Each
// function is defined under the four names compilers use (mpi_allreduce_,
// mpi_allreduce, mpi_allreduce__, MPI_ALLREDUCE), converts the Fortran
// handles and sentinels to C and calls the C core. Built only with an MPI
// whose Fortran sentinels meson found (BAGUA_PMPI_FORTRAN_IN_PLACE /
// BAGUA_PMPI_FORTRAN_BOTTOM list them; doc/pmpi.md covers MPICH).
#include <mpi.h>

#include "interposer.hpp"

// The sentinels' symbols (X-macro lists from meson).
#define BAGUA_PMPI_DECLARE_SENTINEL(name) extern "C" int name;
BAGUA_PMPI_FORTRAN_IN_PLACE(BAGUA_PMPI_DECLARE_SENTINEL)
BAGUA_PMPI_FORTRAN_BOTTOM(BAGUA_PMPI_DECLARE_SENTINEL)

namespace bagua::pmpi {
namespace {

#define BAGUA_PMPI_IS_SENTINEL(name) || buf == static_cast<const void *>(&name)

bool is_fortran_in_place(const void *buf) {
  return false BAGUA_PMPI_FORTRAN_IN_PLACE(BAGUA_PMPI_IS_SENTINEL);
}

bool is_fortran_bottom(const void *buf) {
  return false BAGUA_PMPI_FORTRAN_BOTTOM(BAGUA_PMPI_IS_SENTINEL);
}

// A Fortran buffer argument as the C call takes it (what Open MPI's own
// Fortran bindings do: OMPI_F2C_IN_PLACE, OMPI_F2C_BOTTOM).
const void *send_buffer(const void *buf) {
  if (is_fortran_in_place(buf)) return MPI_IN_PLACE;
  return is_fortran_bottom(buf) ? MPI_BOTTOM : buf;
}

void *recv_buffer(void *buf) { return is_fortran_bottom(buf) ? MPI_BOTTOM : buf; }

void fortran_init(MPI_Fint *ierr) { *ierr = init(nullptr, nullptr); }

void fortran_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
  int c_provided = MPI_THREAD_SINGLE;
  *ierr = init_thread(nullptr, nullptr, *required, &c_provided);
  *provided = c_provided;
}

void fortran_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                       MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr) {
  *ierr = allreduce(send_buffer(sendbuf), recv_buffer(recvbuf), *count, PMPI_Type_f2c(*datatype),
                    PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm));
}

void fortran_iallreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                        MPI_Fint *op, MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr) {
  MPI_Request c_request = MPI_REQUEST_NULL;
  *ierr = iallreduce(send_buffer(sendbuf), recv_buffer(recvbuf), *count, PMPI_Type_f2c(*datatype),
                     PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm), &c_request);
  if (*ierr == MPI_SUCCESS) *request = PMPI_Request_c2f(c_request);
}

}  // namespace
}  // namespace bagua::pmpi

// Defines `lower`, `lower_`, `lower__` and `UPPER` forwarding to `impl`.
#define BAGUA_PMPI_FORTRAN(lower, UPPER, impl, params, args)                     \
  extern "C" BAGUA_PMPI_EXPORT void lower params { bagua::pmpi::impl args; }     \
  extern "C" BAGUA_PMPI_EXPORT void lower##_ params { bagua::pmpi::impl args; }  \
  extern "C" BAGUA_PMPI_EXPORT void lower##__ params { bagua::pmpi::impl args; } \
  extern "C" BAGUA_PMPI_EXPORT void UPPER params { bagua::pmpi::impl args; }

/** MPI_INIT(IERROR): as the C MPI_Init. */
BAGUA_PMPI_FORTRAN(mpi_init, MPI_INIT, fortran_init, (MPI_Fint * ierr), (ierr))

/** MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR): as the C MPI_Init_thread. */
BAGUA_PMPI_FORTRAN(mpi_init_thread, MPI_INIT_THREAD, fortran_init_thread,
                   (MPI_Fint * required, MPI_Fint *provided, MPI_Fint *ierr),
                   (required, provided, ierr))

/** MPI_ALLREDUCE(SENDBUF, RECVBUF, COUNT, DATATYPE, OP, COMM, IERROR). */
BAGUA_PMPI_FORTRAN(mpi_allreduce, MPI_ALLREDUCE, fortran_allreduce,
                   (void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                    MPI_Fint *comm, MPI_Fint *ierr),
                   (sendbuf, recvbuf, count, datatype, op, comm, ierr))

/** MPI_IALLREDUCE(SENDBUF, RECVBUF, COUNT, DATATYPE, OP, COMM, REQUEST, IERROR). */
BAGUA_PMPI_FORTRAN(mpi_iallreduce, MPI_IALLREDUCE, fortran_iallreduce,
                   (void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                    MPI_Fint *comm, MPI_Fint *request, MPI_Fint *ierr),
                   (sendbuf, recvbuf, count, datatype, op, comm, request, ierr))
