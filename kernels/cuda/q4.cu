// q4 min-max codec on the GPU: the payload layer (two 4-bit values per byte,
// the even element in the low nibble) of the shared min-max kernels
// (minmax.cuh).
#include "minmax.cuh"

namespace bagua::codec::gpu {
namespace {

struct Q4 {
  static constexpr uint8_t kTag = kTagQ4;
  static constexpr float kLevels = kQ4Levels;
  __host__ __device__ static size_t block_bytes(uint32_t n) { return q4_block_bytes(n); }
  static size_t encoded_bytes(size_t count, uint32_t block) {
    return codec::q4_encoded_bytes(count, block);
  }
  template <class E>
  __device__ static uint8_t payload_byte(const MinMaxParams &p, const typename E::T *x, uint32_t n,
                                         uint32_t j) {
    const uint32_t i = 2 * j;
    const uint8_t even = i < n ? minmax_quantize(p, E::load(x, i)) : 0;
    return q4_pack(even, i + 1 < n ? minmax_quantize(p, E::load(x, i + 1)) : 0);
  }
  __device__ static uint8_t value(const uint8_t *q, uint32_t i) { return q4_nibble(q, i); }
};

}  // namespace
}  // namespace bagua::codec::gpu

BAGUA_DEFINE_MINMAX_CODEC_GPU(q4, Q4)
