#include "send_memory.hpp"

#include <atomic>
#include <mutex>
#include <utility>

namespace bagua {
namespace {

std::atomic<bool> any_abandoned{false};
std::mutex mutex;
std::vector<std::pair<const unsigned char *, size_t>> abandoned;
// Blocks kept for abandoned sends. Never destroyed (static destructors run
// before leak checkers look), so the blocks stay reachable and are not
// reported as leaks.
std::vector<void *> &kept() {
  static auto *blocks = new std::vector<void *>;
  return *blocks;
}

}  // namespace

void abandoned_send_add(const void *p, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex);
  abandoned.emplace_back(static_cast<const unsigned char *>(p), bytes);
  any_abandoned.store(true, std::memory_order_release);
}

bool abandoned_send_within(const void *p, size_t bytes) {
  if (!any_abandoned.load(std::memory_order_acquire)) return false;
  const auto *begin = static_cast<const unsigned char *>(p);
  std::lock_guard lock(mutex);
  for (const auto &[at, n] : abandoned)
    if (at < begin + bytes && begin < at + n) return true;
  return false;
}

void keep_until_exit(void *p, size_t) {
  std::lock_guard lock(mutex);
  kept().push_back(p);
}

}  // namespace bagua
