// q8 min-max codec on the GPU: the payload layer (one uint8 per element) of
// the shared min-max kernels (minmax.cuh).
#include "minmax.cuh"

namespace bagua::codec::gpu {
namespace {

struct Q8 {
  static constexpr uint8_t kTag = kTagQ8;
  static constexpr float kLevels = kQ8Levels;
  static constexpr uint32_t kElemsPerByte = 1;
  __host__ __device__ static size_t block_bytes(uint32_t n) { return q8_block_bytes(n); }
  static size_t encoded_bytes(size_t count, uint32_t block) {
    return codec::q8_encoded_bytes(count, block);
  }
  __device__ static uint8_t pack(const uint8_t (&q)[1]) { return q[0]; }
  __device__ static uint8_t value(uint8_t byte, uint32_t) { return byte; }
};

}  // namespace
}  // namespace bagua::codec::gpu

BAGUA_DEFINE_MINMAX_CODEC_GPU(q8, Q8)
