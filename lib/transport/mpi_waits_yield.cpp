#include "mpi_waits_yield.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include <mutex>

namespace bagua {
namespace {

using SetYield = bool (*)(bool);

constexpr const char *kSetYield = "opal_progress_set_yield_when_idle";

// Open MPI's setter, or NULL under another MPI. A library loaded without
// RTLD_GLOBAL (a Python extension) keeps the MPI's libraries out of the
// global scope: there the search starts from the MPI library itself, the
// one holding PMPI_Init, and covers what it loaded.
SetYield find_set_yield() {
  if (void *global = dlsym(RTLD_DEFAULT, kSetYield)) return reinterpret_cast<SetYield>(global);
  Dl_info mpi{};
  if (dladdr(reinterpret_cast<void *>(&PMPI_Init), &mpi) == 0 || mpi.dli_fname == nullptr)
    return nullptr;
  void *library = dlopen(mpi.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (library == nullptr) return nullptr;
  // The handle stays open: the setter is used until the process ends.
  return reinterpret_cast<SetYield>(dlsym(library, kSetYield));
}

std::mutex holders_mutex;  // guards holders and found_before
int holders = 0;
bool found_before = false;

}  // namespace

void MpiWaitsYield::hold(bool on) {
  static const SetYield set_yield = find_set_yield();
  if (on == held_ || set_yield == nullptr) return;
  held_ = on;
  std::lock_guard lock(holders_mutex);
  if (on && holders++ == 0) found_before = set_yield(true);
  if (!on && --holders == 0) set_yield(found_before);
}

}  // namespace bagua
