// C entry points of the library's lifetime (lib/core/runtime.hpp).
#include "../core/runtime.hpp"

#include "guard.hpp"

extern "C" int bagua_finalize(void) {
  return bagua::guard("bagua_finalize", [] { return bagua::runtime_finalize(); });
}
