#include "tags.hpp"

#include <algorithm>
#include <bit>

namespace bagua {

Status TagLayout::make(Tag max_tag, TagLayout *out) {
  // Usable bits: all tags of b bits must be <= max_tag.
  const int bits = std::min(kMaxBits, int(std::bit_width(uint64_t{max_tag} + 1)) - 1);
  if (bits < kMinBits)
    return fail(BAGUA_ERR_TRANSPORT,
                "the transport's largest tag is %u; bagua needs at least %u (2^%d - 1, the "
                "MPI standard's minimum MPI_TAG_UB)",
                max_tag, (1u << kMinBits) - 1, kMinBits);
  out->step_bits_ = std::min(kMaxStepBits, bits - kMinSlotBits);
  out->slot_bits_ = bits - out->step_bits_;
  return BAGUA_SUCCESS;
}

CallTags TagLayout::call(uint64_t slot) const {
  const auto s = static_cast<Tag>(slot & (slots() - 1));
  return {s << step_bits_, (uint32_t{1} << step_bits_) - 1};
}

}  // namespace bagua
