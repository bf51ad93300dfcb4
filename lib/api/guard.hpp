// Every C entry point runs its body through guard(): no exception crosses
// the C boundary, and the thread's last error starts out empty.
#pragma once

#include <new>

#include "../base/status.hpp"

namespace bagua {

template <class Body>
int guard(const char *fn, Body body) noexcept {
  clear_last_error();
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(BAGUA_ERR_OUT_OF_MEMORY, "%s: allocation failed", fn);
  } catch (...) {
    return fail(BAGUA_ERR_INTERNAL, "%s: unexpected exception", fn);
  }
}

}  // namespace bagua
