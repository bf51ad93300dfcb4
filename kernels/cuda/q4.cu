// q4 min-max codec on the GPU: the payload layer (two 4-bit values per byte,
// the even element in the low nibble) of the shared min-max kernels
// (minmax.cuh).
#include "minmax.cuh"

namespace bagua::codec::gpu {
namespace {

struct Q4 {
  static constexpr uint8_t kTag = kTagQ4;
  static constexpr float kLevels = kQ4Levels;
  static constexpr uint32_t kElemsPerByte = 2;
  __host__ __device__ static size_t block_bytes(uint32_t n) { return q4_block_bytes(n); }
  static size_t encoded_bytes(size_t count, uint32_t block) {
    return codec::q4_encoded_bytes(count, block);
  }
  __device__ static uint8_t pack(const uint8_t (&q)[2]) { return q4_pack(q[0], q[1]); }
  __device__ static uint8_t value(uint8_t byte, uint32_t k) { return q4_nibble(&byte, k); }
};

}  // namespace
}  // namespace bagua::codec::gpu

BAGUA_DEFINE_MINMAX_CODEC_GPU(q4, Q4)
