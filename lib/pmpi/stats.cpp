#include "stats.hpp"

#include <cstdio>

namespace bagua::pmpi {
namespace {

std::string format_bytes(uint64_t bytes) {
  char text[32];
  if (bytes >= (1u << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else if (bytes >= (1u << 10))
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / (1 << 10));
  else
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  return text;
}

std::string format_totals(uint64_t calls, uint64_t bytes, uint64_t nanoseconds) {
  char text[96];
  std::snprintf(text, sizeof text, "%llu calls (%s, %.3f s", static_cast<unsigned long long>(calls),
                format_bytes(bytes).c_str(), static_cast<double>(nanoseconds) * 1e-9);
  return text;
}

}  // namespace

void Stats::record(Route route, uint64_t bytes, double seconds) {
  Counter &c = counters_[static_cast<int>(route)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.nanoseconds.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
}

void Stats::record_inner() { inner_.fetch_add(1, std::memory_order_relaxed); }

uint64_t Stats::calls(Route route) const { return counters_[static_cast<int>(route)].calls.load(); }

std::string Stats::summary(int rank, const Policy &policy) const {
  const Counter &routed = counters_[static_cast<int>(Route::bagua)];
  uint64_t calls = 0, bytes = 0, nanoseconds = 0;
  std::string reasons;
  for (int r = 1; r < kRouteCount; ++r) {
    const Counter &c = counters_[r];
    if (c.calls == 0) continue;
    calls += c.calls;
    bytes += c.bytes;
    nanoseconds += c.nanoseconds;
    reasons += std::string(reasons.empty() ? ": " : ", ") + route_name(static_cast<Route>(r)) +
               " " + std::to_string(c.calls.load());
  }
  char head[96];
  std::snprintf(head, sizeof head, "bagua-pmpi: rank %d: mode %s, min count %lld: ", rank,
                mode_name(policy.mode), static_cast<long long>(policy.min_count));
  return head + std::string("routed ") +
         format_totals(routed.calls, routed.bytes, routed.nanoseconds) + "); passed " +
         format_totals(calls, bytes, nanoseconds) + reasons + "); bagua's own calls " +
         std::to_string(inner_calls());
}

}  // namespace bagua::pmpi
