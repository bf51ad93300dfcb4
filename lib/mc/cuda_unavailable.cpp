// Built instead of cuda_device.cpp and cuda_codecs.cu when CUDA is disabled
// or missing: no CUDA device, so no buffer is CUDA memory.
#include "cuda_device.hpp"

namespace bagua {

Device *cuda_device() { return nullptr; }

}  // namespace bagua
