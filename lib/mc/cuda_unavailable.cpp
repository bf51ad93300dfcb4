// Built instead of cuda_codecs.cpp when CUDA is disabled or missing: no
// buffer is ever device memory then (memory_type_of), so no device codec is
// asked for.
#include "cuda_codecs.hpp"

namespace bagua {

std::unique_ptr<ChunkCodec> make_device_codec(Wire, uint32_t, float, float, void *) {
  return nullptr;
}

}  // namespace bagua
