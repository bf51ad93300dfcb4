// Status codes and the per-thread detailed error message.
#pragma once

#include <array>

#include "bagua.h"

namespace bagua {

using Status = bagua_status_t;

// Records a detailed message for bagua_last_error() and returns `code`, so a
// failure site reads: `return fail(BAGUA_ERR_..., "count %d < 0", count);`.
[[gnu::format(printf, 2, 3)]] Status fail(Status code, const char *fmt, ...);

// Message of the last failure on this thread ("" if none).
const char *last_error_message();
void clear_last_error();

// A detailed message held aside: a fiber (fiber.hpp) keeps its own and
// exchanges it with the thread's when it is switched in and out.
using ErrorText = std::array<char, 512>;
void exchange_last_error(ErrorText &held);

}  // namespace bagua

// Propagates a non-success status to the caller.
#define BAGUA_TRY(expr)                           \
  do {                                            \
    const ::bagua::Status status_ = (expr);       \
    if (status_ != BAGUA_SUCCESS) return status_; \
  } while (0)
