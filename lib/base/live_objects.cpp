#include "live_objects.hpp"

#include <array>
#include <atomic>

namespace bagua {
namespace {

std::array<std::atomic<int64_t>, static_cast<size_t>(Live::kinds)> counts{};

}  // namespace

void live_add(Live kind, int64_t delta) {
  counts[static_cast<size_t>(kind)].fetch_add(delta, std::memory_order_relaxed);
}

int64_t live_count(Live kind) {
  return counts[static_cast<size_t>(kind)].load(std::memory_order_relaxed);
}

}  // namespace bagua
