// Where a user buffer lives: host memory or CUDA device memory.
#pragma once

namespace bagua {

// True when p is CUDA device memory (cudaMemoryTypeDevice). False for host,
// pinned host and managed memory (the CPU can read those), in a build
// without CUDA, and when the CUDA runtime reports no usable device.
// Costs about a microsecond per call with CUDA.
bool is_device_pointer(const void *p);

}  // namespace bagua
