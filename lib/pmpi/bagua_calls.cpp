#include "bagua_calls.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "bagua.h"

namespace bagua::pmpi {
namespace {

MPI_Datatype bagua_type(TypeClass type) {
  return type == TypeClass::float32 ? MPI_FLOAT : MPI_DOUBLE;
}

size_t element_size(TypeClass type) { return type == TypeClass::float32 ? 4 : 8; }

// ---------------------------------------------------------------------------
// Error-feedback states of sign mode: one per (count, recvbuf) on a
// communicator, since a program's successive MPI_Allreduce calls on one buffer
// are one gradient across iterations. Kept in an attribute of the user's
// communicator, so they go with it. A program that cycles through more
// buffers than kMaxSignStates starts over with fresh states.

constexpr size_t kMaxSignStates = 64;

using SignStates = std::map<std::pair<int, void *>, bagua_sign_state_t>;

void destroy_sign_states(SignStates *states) {
  for (auto &[key, state] : *states) bagua_sign_state_destroy(&state);
  states->clear();
}

int delete_sign_states(MPI_Comm, int, void *value, void *) {
  auto *states = static_cast<SignStates *>(value);
  destroy_sign_states(states);
  delete states;
  return MPI_SUCCESS;
}

int sign_states_keyval() {
  static int keyval = MPI_KEYVAL_INVALID;
  static std::once_flag once;
  std::call_once(once, [] {
    PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_sign_states, &keyval, nullptr);
  });
  return keyval;
}

SignStates *sign_states_of(MPI_Comm comm) {
  void *value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, sign_states_keyval(), &value, &found);
  if (found) return static_cast<SignStates *>(value);
  auto *states = new SignStates;
  PMPI_Comm_set_attr(comm, sign_states_keyval(), states);
  return states;
}

int sign_state_for(MPI_Comm comm, int count, void *recvbuf, bagua_sign_state_t *out) {
  SignStates *states = sign_states_of(comm);
  const auto key = std::make_pair(count, recvbuf);
  if (auto it = states->find(key); it != states->end()) {
    *out = it->second;
    return BAGUA_SUCCESS;
  }
  if (states->size() >= kMaxSignStates) destroy_sign_states(states);
  const int status = bagua_sign_state_create(count, comm, out);
  if (status == BAGUA_SUCCESS) states->emplace(key, *out);
  return status;
}

// `program_recvbuf` names the state: the program's buffer, also when the call
// runs on a staged copy.
int allreduce_sign(const void *sendbuf, void *recvbuf, int count, MPI_Op op, MPI_Comm comm,
                   void *program_recvbuf) {
  bagua_sign_state_t state = nullptr;
  const int status = sign_state_for(comm, count, program_recvbuf, &state);
  if (status != BAGUA_SUCCESS) return status;
  return bagua_allreduce_sign(sendbuf, recvbuf, count, MPI_FLOAT, op, comm, state);
}

// ---------------------------------------------------------------------------

int run_aligned(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type, MPI_Op op,
                MPI_Comm comm, void *program_recvbuf) {
  if (mode == Mode::off) return BAGUA_ERR_INTERNAL;
  // Algorithms with state run with one per buffer (sign: allreduce_sign).
  if (bagua_algorithm_has_state(algorithm_of(mode)))
    return allreduce_sign(sendbuf, recvbuf, count, op, comm, program_recvbuf);
  return bagua_allreduce_alg(sendbuf, recvbuf, count, bagua_type(type), op, comm,
                             algorithm_of(mode));
}

int start_aligned(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type,
                  MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  return bagua_iallreduce_alg(sendbuf, recvbuf, count, bagua_type(type), op, comm,
                              algorithm_of(mode), request);
}

// bagua needs element-aligned buffers, MPI does not. Alignment is local to a
// rank (routing stays collective), so a misaligned call runs on an aligned
// copy of its input, in place.
bool is_aligned(const void *buf, TypeClass type) {
  return reinterpret_cast<uintptr_t>(buf) % element_size(type) == 0;
}

bool needs_staging(const void *sendbuf, const void *recvbuf, TypeClass type) {
  return !is_aligned(recvbuf, type) || (sendbuf != MPI_IN_PLACE && !is_aligned(sendbuf, type));
}

std::vector<double> staged_input(const void *sendbuf, const void *recvbuf, int count,
                                 TypeClass type) {
  const size_t bytes = static_cast<size_t>(count) * element_size(type);
  std::vector<double> staged((bytes + sizeof(double) - 1) / sizeof(double));
  std::memcpy(staged.data(), sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, bytes);
  return staged;
}

void unstage(const std::vector<double> &staged, void *recvbuf, int count, TypeClass type) {
  std::memcpy(recvbuf, staged.data(), static_cast<size_t>(count) * element_size(type));
}

int query_nothing(void *, MPI_Status *status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}
int free_nothing(void *) { return MPI_SUCCESS; }
int cancel_nothing(void *, int) { return MPI_SUCCESS; }

// A request that is already complete (the nonblocking call ran to its end).
MPI_Request completed_request() {
  MPI_Request request = MPI_REQUEST_NULL;
  PMPI_Grequest_start(query_nothing, free_nothing, cancel_nothing, nullptr, &request);
  PMPI_Grequest_complete(request);
  return request;
}

// A misaligned nonblocking call cannot copy its result back when the program
// completes the request, so it completes before returning (documented in
// doc/pmpi.md).
int run_nonblocking_staged(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type,
                           MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  std::vector<double> staged = staged_input(sendbuf, recvbuf, count, type);
  MPI_Request inner = MPI_REQUEST_NULL;
  int status = start_aligned(mode, MPI_IN_PLACE, staged.data(), count, type, op, comm, &inner);
  if (status != BAGUA_SUCCESS) return status;
  if (PMPI_Wait(&inner, MPI_STATUS_IGNORE) != MPI_SUCCESS) return BAGUA_ERR_TRANSPORT;
  unstage(staged, recvbuf, count, type);
  *request = completed_request();
  return BAGUA_SUCCESS;
}

}  // namespace

const char *bagua_function(Mode mode, CallKind call) {
  if (mode == Mode::off) return "PMPI_Allreduce";
  if (call == CallKind::nonblocking) return "bagua_iallreduce_alg";
  return bagua_algorithm_has_state(algorithm_of(mode)) ? "bagua_allreduce_sign"
                                                       : "bagua_allreduce_alg";
}

int run_blocking(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type,
                 MPI_Op op, MPI_Comm comm) {
  if (!needs_staging(sendbuf, recvbuf, type))
    return run_aligned(mode, sendbuf, recvbuf, count, type, op, comm, recvbuf);
  std::vector<double> staged = staged_input(sendbuf, recvbuf, count, type);
  const int status = run_aligned(mode, MPI_IN_PLACE, staged.data(), count, type, op, comm, recvbuf);
  if (status == BAGUA_SUCCESS) unstage(staged, recvbuf, count, type);
  return status;
}

int run_nonblocking(Mode mode, const void *sendbuf, void *recvbuf, int count, TypeClass type,
                    MPI_Op op, MPI_Comm comm, MPI_Request *request) {
  if (needs_staging(sendbuf, recvbuf, type))
    return run_nonblocking_staged(mode, sendbuf, recvbuf, count, type, op, comm, request);
  return start_aligned(mode, sendbuf, recvbuf, count, type, op, comm, request);
}

}  // namespace bagua::pmpi
