// C entry points of asynchronous model averaging.
#include "../core/async_average.hpp"

#include "../core/call.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"

struct bagua_async_s {
  std::unique_ptr<bagua::AsyncAverager> averager;
};

namespace bagua {
namespace {

Status async_create(void *buf, int count, MPI_Datatype datatype, int interval_ms, MPI_Comm comm,
                    bagua_async_t *handle) {
  if (handle == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "handle is NULL");
  *handle = nullptr;
  Call call;
  BAGUA_TRY(describe_buffer(Family::async, Wire::exact, "buf", buf, count, datatype, comm, &call));
  if (interval_ms < 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "interval_ms %d is negative", interval_ms);
  auto h = std::make_unique<bagua_async_s>();
  BAGUA_TRY(AsyncAverager::create(buf, call.count, call.dtype, call.memory, interval_ms, comm,
                                  &h->averager));
  *handle = h.release();
  return BAGUA_SUCCESS;
}

// Runs `body` on the handle's averager after checking the handle.
template <class Body>
int with_handle(const char *fn, bagua_async_t handle, Body body) {
  return guard(fn, [&] {
    if (handle == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "handle is NULL");
    return body(*handle->averager);
  });
}

}  // namespace
}  // namespace bagua

extern "C" int bagua_async_average_create(void *buf, int count, MPI_Datatype datatype,
                                          int interval_ms, MPI_Comm comm, bagua_async_t *handle) {
  return bagua::guard("bagua_async_average_create", [&] {
    return bagua::async_create(buf, count, datatype, interval_ms, comm, handle);
  });
}

extern "C" int bagua_async_average_lock(bagua_async_t handle) {
  return bagua::with_handle("bagua_async_average_lock", handle, [](bagua::AsyncAverager &a) {
    a.lock();
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_async_average_unlock(bagua_async_t handle) {
  return bagua::with_handle("bagua_async_average_unlock", handle, [](bagua::AsyncAverager &a) {
    a.unlock();
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_async_average_abort(bagua_async_t handle) {
  return bagua::with_handle("bagua_async_average_abort", handle,
                            [](bagua::AsyncAverager &a) { return a.abort(); });
}

extern "C" int bagua_async_average_resume(bagua_async_t handle) {
  return bagua::with_handle("bagua_async_average_resume", handle,
                            [](bagua::AsyncAverager &a) { return a.resume(); });
}

extern "C" int bagua_async_average_rounds(bagua_async_t handle, long long *rounds) {
  constexpr const char *fn = "bagua_async_average_rounds";
  return bagua::with_handle(fn, handle, [&](bagua::AsyncAverager &a) {
    if (rounds == nullptr) return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "rounds is NULL");
    *rounds = a.rounds();
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_async_average_destroy(bagua_async_t *handle) {
  return bagua::guard("bagua_async_average_destroy", [&] {
    if (handle == nullptr || *handle == nullptr) return BAGUA_SUCCESS;
    const bagua::Status s = (*handle)->averager->abort();
    delete *handle;
    *handle = nullptr;
    return s;
  });
}
