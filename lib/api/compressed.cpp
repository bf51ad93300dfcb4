// C entry points of the sign codec's error-feedback state and of the CUDA
// stream setting of device-buffer calls.
#include "compressed.hpp"

#include <algorithm>

#include "../core/runtime.hpp"
#include "guard.hpp"

namespace bagua {

Status attach_sign_state(bagua_sign_state_t state, Call *call) {
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  const SignFeedback &f = state->feedback;  // checked first
  if (f.count != call->count)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "state was created for count %zu, not %zu", f.count,
                call->count);
  if (f.comm != call->comm)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "state was created for another comm");
  SignFeedback &feedback = state->feedback;
  if (call->count > 0 && feedback.bound && feedback.memory != call->memory)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "state keeps its residuals in %s memory (its first call's buffers) but the "
                "buffers are in %s memory; use one state per memory type",
                feedback.memory == Memory::cuda ? "CUDA device" : "host",
                call->memory == Memory::cuda ? "CUDA device" : "host");
  // Nonblocking calls stage device buffers through the host, with the host
  // residuals.
  if (call->family == Family::iallreduce && call->memory == Memory::cuda &&
      feedback.device_contribution.get() != nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "state keeps its residuals in CUDA device memory (a blocking call made them), "
                "but a nonblocking call stages device buffers through the host; use one state "
                "for each");
  if (!feedback.claim())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "state is in use by another call (a nonblocking call not yet complete, or a "
                "call on another thread); one call at a time per state");
  if (call->count > 0) {
    feedback.bound = true;
    feedback.memory = call->memory;
  }
  call->feedback = &feedback;
  return BAGUA_SUCCESS;
}

namespace {

Status sign_state_create(int count, MPI_Comm comm, bagua_sign_state_t *state) {
  BAGUA_TRY(runtime_ensure());
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  if (count < 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "count %d is negative", count);
  if (comm == MPI_COMM_NULL) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
  const auto n = static_cast<size_t>(count);
  *state = new bagua_sign_state_s{SignFeedback(comm, n)};
  return BAGUA_SUCCESS;
}

// The state's host residuals, checked for a copy of `count` floats in or out
// (its two residuals, one after the other).
Status checked_residuals(bagua_sign_state_t state, const float *buffer, MPI_Count count,
                         SignFeedback **out) {
  if (state == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  SignFeedback &f = state->feedback;
  if (count < 0 || static_cast<size_t>(count) != 2 * f.count)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "count %lld is not twice the state's count %zu (its two residuals)",
                static_cast<long long>(count), f.count);
  if (buffer == nullptr && count > 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "buffer is NULL");
  if (f.device_contribution.get() != nullptr)
    return fail(BAGUA_ERR_NOT_AVAILABLE,
                "state keeps its residuals in CUDA device memory; only host states are copied");
  if (f.in_use.load())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "state is in use by a call in flight; wait for it before copying its residuals");
  *out = &f;
  return BAGUA_SUCCESS;
}

Status sign_state_save(bagua_sign_state_t state, float *residuals, MPI_Count count) {
  SignFeedback *f = nullptr;
  BAGUA_TRY(checked_residuals(state, residuals, count, &f));
  std::copy(f->contribution.begin(), f->contribution.end(), residuals);
  std::copy(f->reduced.begin(), f->reduced.end(), residuals + f->count);
  return BAGUA_SUCCESS;
}

Status sign_state_load(bagua_sign_state_t state, const float *residuals, MPI_Count count) {
  SignFeedback *f = nullptr;
  BAGUA_TRY(checked_residuals(state, residuals, count, &f));
  std::copy(residuals, residuals + f->count, f->contribution.begin());
  std::copy(residuals + f->count, residuals + 2 * f->count, f->reduced.begin());
  return BAGUA_SUCCESS;
}

Status set_stream(MPI_Comm comm, void *stream) {
  BAGUA_TRY(runtime_ensure());
  if (comm == MPI_COMM_NULL) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
  if (!BAGUA_HAVE_CUDA) return fail(BAGUA_ERR_NOT_AVAILABLE, "bagua was built without CUDA");
  set_device_stream(comm, stream);
  return BAGUA_SUCCESS;
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_sign_state_create(int count, MPI_Comm comm, bagua_sign_state_t *state) {
  return bagua::guard("bagua_sign_state_create",
                      [&] { return bagua::sign_state_create(count, comm, state); });
}

extern "C" int bagua_sign_state_destroy(bagua_sign_state_t *state) {
  return bagua::guard("bagua_sign_state_destroy", [&] {
    if (state == nullptr || *state == nullptr) return BAGUA_SUCCESS;
    if ((*state)->feedback.in_use.load())
      return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT,
                         "state is in use by a call in flight; wait for it before freeing it");
    delete *state;
    *state = nullptr;
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_sign_state_save(bagua_sign_state_t state, float *residuals, MPI_Count count) {
  return bagua::guard("bagua_sign_state_save",
                      [&] { return bagua::sign_state_save(state, residuals, count); });
}

extern "C" int bagua_sign_state_load(bagua_sign_state_t state, const float *residuals,
                                     MPI_Count count) {
  return bagua::guard("bagua_sign_state_load",
                      [&] { return bagua::sign_state_load(state, residuals, count); });
}

extern "C" int bagua_set_cuda_stream(MPI_Comm comm, void *stream) {
  return bagua::guard("bagua_set_cuda_stream", [&] { return bagua::set_stream(comm, stream); });
}
