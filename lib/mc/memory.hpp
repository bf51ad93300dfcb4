// The memory component: where a user buffer lives, and
// everything that touches device memory (the Device of device.hpp, its
// scratch, the CUDA stream setting, the device codec adapters). Algorithms
// never include it; the core resolves a call's memory type once and picks
// host or device codecs, or stages device buffers through host memory.
#pragma once

#include "../base/dtype.hpp"

namespace bagua {

// Memory::cuda when p is memory of the active device (active_device(); for
// CUDA cudaMemoryTypeDevice). Host for host, pinned host and managed memory
// (the CPU can read those), in a build without CUDA, and when the CUDA
// runtime reports no usable device. Costs about a microsecond per call with
// CUDA.
Memory memory_type_of(const void *p);

}  // namespace bagua
