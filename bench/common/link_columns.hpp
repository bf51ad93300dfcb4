// The link columns of bagua-bench and bagua-bench-compressed (doc/tools.md):
// for a link rate given with --link RATE (or BAGUA_BENCH_LINK, which
// bench/netemu.sh sets to its -r rate), each row shows the bytes one rank
// sends (as the library reports them), the time a link of that rate needs
// for them alone, and the fraction of that limit the call reached.
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace bagua_bench {

// Bits per second of a rate in tc's syntax: a number with bit, kbit, mbit,
// gbit, tbit (bits/s) or bps, kbps, mbps, gbps, tbps (bytes/s); a bare number
// is bits/s as in tc. Returns false for anything else or a rate <= 0.
inline bool parse_link_rate(const std::string &text, double *bits_per_second) {
  struct Unit {
    const char *suffix;
    double factor;
  };
  static const Unit kUnits[] = {{"", 1},       {"bit", 1},     {"kbit", 1e3}, {"mbit", 1e6},
                                {"gbit", 1e9}, {"tbit", 1e12}, {"bps", 8},    {"kbps", 8e3},
                                {"mbps", 8e6}, {"gbps", 8e9},  {"tbps", 8e12}};
  char *end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !(value > 0)) return false;
  std::string suffix(end);
  for (char &ch : suffix) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  for (const Unit &u : kUnits) {
    if (suffix == u.suffix) {
      *bits_per_second = value * u.factor;
      return true;
    }
  }
  return false;
}

// The rate of --link, else of BAGUA_BENCH_LINK, else none (0: the link
// columns print "-"). `given` is the option's value or nullptr.
class LinkColumns {
 public:
  // Returns false (with *why set) when the rate is malformed.
  bool init(const char *given, std::string *why) {
    const char *env = std::getenv("BAGUA_BENCH_LINK");
    const char *text = given != nullptr ? given : env;
    if (text == nullptr || *text == '\0') return true;
    name_ = text;
    if (parse_link_rate(name_, &bits_per_second_)) return true;
    *why = std::string(given != nullptr ? "--link" : "BAGUA_BENCH_LINK") + " '" + name_ +
           "' is not a rate such as 100mbit, 1gbit or 10gbit";
    return false;
  }

  const char *name() const { return name_.empty() ? "none" : name_.c_str(); }

  // Header cells and one row's cells, each `width` wide after a space.
  static std::string header() { return format_cells("sent(B)", "link(us)", "of link"); }

  std::string cells(long long bytes_sent, double seconds) const {
    char sent[32], limit[32] = "-", fraction[32] = "-";
    std::snprintf(sent, sizeof sent, "%lld", bytes_sent);
    if (bits_per_second_ > 0) {
      const double link_seconds = double(bytes_sent) * 8 / bits_per_second_;
      std::snprintf(limit, sizeof limit, "%.0f", link_seconds * 1e6);
      std::snprintf(fraction, sizeof fraction, "%.1f%%", 100 * link_seconds / seconds);
    }
    return format_cells(sent, limit, fraction);
  }

 private:
  static std::string format_cells(const char *a, const char *b, const char *c) {
    char out[96];
    std::snprintf(out, sizeof out, " %11s %10s %7s", a, b, c);
    return out;
  }

  std::string name_;
  double bits_per_second_ = 0;
};

}  // namespace bagua_bench
