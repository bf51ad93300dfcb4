// Every C entry point runs its body through guard(): no exception crosses
// the C boundary, the thread's last error starts out empty, and a failure's
// message is formatted one way: "<entry point>: <what went wrong>" (inner
// layers never name the entry point).
#pragma once

#include <cstring>
#include <new>
#include <string>

#include "../base/status.hpp"

namespace bagua {

// Prefixes the thread's last error with `fn` unless it already starts so.
inline Status named(const char *fn, Status s) {
  if (s == BAGUA_SUCCESS) return s;
  const char *message = last_error_message();
  const size_t n = std::strlen(fn);
  if (std::strncmp(message, fn, n) == 0 && message[n] == ':') return s;
  const std::string inner = *message != '\0' ? message : bagua_error_string(s);
  return fail(s, "%s: %s", fn, inner.c_str());
}

template <class Body>
int guard(const char *fn, Body body) noexcept {
  clear_last_error();
  try {
    return named(fn, body());
  } catch (const std::bad_alloc &) {
    return fail(BAGUA_ERR_OUT_OF_MEMORY, "%s: allocation failed", fn);
  } catch (...) {
    return fail(BAGUA_ERR_INTERNAL, "%s: unexpected exception", fn);
  }
}

}  // namespace bagua
