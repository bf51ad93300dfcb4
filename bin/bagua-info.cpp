// bagua-info: version, build configuration, transports, the support matrix,
// the selection policy and every environment variable with its default and
// current value (like ucx_info).
//   bagua-info            everything
//   bagua-info --env      environment variables only
//   bagua-info --support  the support matrix and the selection rules only
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "bagua.h"
#include "base/env.hpp"
#include "core/collectives.hpp"
#include "core/options.hpp"
#include "core/select.hpp"
#include "core/support.hpp"

namespace {

void print_build() {
  std::printf("# bagua %s (%s build)\n", bagua_version_string(), BAGUA_BUILD_TYPE);
  std::printf("#   CUDA kernels : %s\n", BAGUA_HAVE_CUDA ? "yes" : "no");
  std::printf("#   UCX transport: %s\n", BAGUA_HAVE_UCX ? "yes" : "no");
  std::printf("#   transports   : mpi%s\n", BAGUA_HAVE_UCX ? ", ucx" : "");
}

void print_support() {
  std::printf("#\n# Support matrix\n| family | wire | datatypes | ops | memory |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const bagua::SupportRow &row : bagua::support_matrix())
    std::printf("%s\n", bagua::support_row_text(row).c_str());
  std::printf("# Data movement: %s\n", bagua::movement_support_text());
}

// The selection rules of the blocking calls under the current environment.
void print_selection() {
  bagua::Options options;
  if (bagua::options_load(&options) != BAGUA_SUCCESS) {
    std::printf("#\n# Selection rules: %s\n", bagua::last_error_message());
    return;
  }
  std::printf("#\n# Selection rules of the blocking calls (highest score wins)\n");
  const bagua::SelectionPolicy policy = bagua::SelectionPolicy::of(options);
  for (const bagua::ScoreRow &r : policy.rows(bagua::Family::allreduce)) {
    const bool open = r.max_bytes == std::numeric_limits<size_t>::max();
    const std::string max = open ? "inf" : std::to_string(r.max_bytes);
    std::printf("%-6s %-18s bytes [%zu, %s] memory %s score %d\n", bagua::wire_name(r.wire),
                r.schedule->name, r.min_bytes, max.c_str(), bagua::memory_list(r.memory).c_str(),
                r.score);
  }
}

void print_env() {
  std::printf("#\n# Environment variables (default; current value if set)\n");
  for (const bagua::EnvVar &v : bagua::env_vars()) {
    const char *current = std::getenv(v.name);
    const char *old = v.alias != nullptr ? std::getenv(v.alias) : nullptr;
    const std::string range = v.range.integer() ? "  range=" + std::to_string(v.range.lo) + ".." +
                                                      std::to_string(v.range.hi)
                                                : "";
    std::printf("%-26s default=%s%s%s%s%s%s\n    %s\n", v.name, v.default_value, range.c_str(),
                current ? "  current=" : "", current ? current : "",
                old ? "  current (as its earlier name)=" : "", old ? old : "", v.description);
  }
}

}  // namespace

int main(int argc, char **argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode != "--env") {
    if (mode != "--support") print_build();
    print_support();
    print_selection();
  }
  if (mode != "--support") print_env();
  return 0;
}
