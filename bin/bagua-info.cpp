// bagua-info: version, build configuration, transports and every environment
// variable with its default and current value (like ucx_info).
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bagua.h"
#include "base/env.hpp"

namespace {

void print_build() {
  std::printf("# bagua %s (%s build)\n", bagua_version_string(), BAGUA_BUILD_TYPE);
  std::printf("#   CUDA kernels : %s\n", BAGUA_HAVE_CUDA ? "yes" : "no");
  std::printf("#   UCX transport: %s\n", BAGUA_HAVE_UCX ? "yes" : "no");
  std::printf("#   transports   : mpi%s\n", BAGUA_HAVE_UCX ? ", ucx" : "");
}

void print_env() {
  std::printf("#\n# Environment variables (default; current value if set)\n");
  for (const bagua::EnvVar &v : bagua::env_vars()) {
    const char *current = std::getenv(v.name);
    std::printf("%-26s default=%s%s%s\n    %s\n", v.name, v.default_value,
                current ? "  current=" : "", current ? current : "", v.description);
  }
}

}  // namespace

int main(int argc, char **argv) {
  const bool env_only = argc > 1 && std::string_view(argv[1]) == "--env";
  if (!env_only) print_build();
  print_env();
  return 0;
}
