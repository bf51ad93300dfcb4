#include "status.hpp"

#include <cstdarg>
#include <cstdio>
#include <utility>

namespace bagua {
namespace {
thread_local ErrorText last_message{};
}

Status fail(Status code, const char *fmt, ...) {
  std::va_list args;
  va_start(args, fmt);
  std::vsnprintf(last_message.data(), last_message.size(), fmt, args);
  va_end(args);
  return code;
}

const char *last_error_message() { return last_message.data(); }

void clear_last_error() { last_message[0] = '\0'; }

void exchange_last_error(ErrorText &held) { std::swap(held, last_message); }

}  // namespace bagua

extern "C" const char *bagua_error_string(int status) {
  switch (status) {
    case BAGUA_SUCCESS: return "success";
    case BAGUA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case BAGUA_ERR_UNSUPPORTED_DATATYPE: return "unsupported datatype";
    case BAGUA_ERR_UNSUPPORTED_OP: return "unsupported reduction operation";
    case BAGUA_ERR_TIMEOUT: return "timed out waiting for a peer";
    case BAGUA_ERR_TRANSPORT: return "transport (MPI/UCX) failure";
    case BAGUA_ERR_MISMATCH: return "ranks disagree on the call's arguments";
    case BAGUA_ERR_CORRUPT_DATA: return "received data failed validation";
    case BAGUA_ERR_OUT_OF_MEMORY: return "out of memory";
    case BAGUA_ERR_COMM_BROKEN: return "communicator unusable after an earlier failure";
    case BAGUA_ERR_NOT_INITIALIZED: return "MPI is not initialized";
    case BAGUA_ERR_THREAD_LEVEL: return "MPI thread level too low";
    case BAGUA_ERR_INTERNAL: return "internal error";
    case BAGUA_ERR_NOT_AVAILABLE: return "feature not available in this build";
    default: return "unknown status code";
  }
}

extern "C" const char *bagua_last_error(void) { return bagua::last_error_message(); }

extern "C" const char *bagua_version_string(void) { return BAGUA_VERSION_STRING; }
