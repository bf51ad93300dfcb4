#include "exchange.hpp"

#include <algorithm>
#include <cstring>

namespace bagua {

Status Exchange::max(std::span<const int64_t> in, std::span<int64_t> out, const char *what) {
  std::vector<char> all;
  std::vector<int> offsets;
  BAGUA_TRY(allgather({reinterpret_cast<const char *>(in.data()), in.size_bytes()}, what, &all,
                      &offsets));
  if (all.size() != in.size_bytes() * offsets.size())
    return fail(BAGUA_ERR_MISMATCH, "%s: ranks sent different numbers of values", what);
  std::copy(in.begin(), in.end(), out.begin());
  for (const int offset : offsets) {
    for (size_t i = 0; i < in.size(); ++i) {
      int64_t v = 0;
      std::memcpy(&v, all.data() + offset + i * sizeof v, sizeof v);
      out[i] = std::max(out[i], v);
    }
  }
  return BAGUA_SUCCESS;
}

}  // namespace bagua
