#include "memory.hpp"

#if BAGUA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace bagua {

#if BAGUA_HAVE_CUDA
namespace {

// Asked once: without a device (or a driver) every pointer is a host pointer.
bool cuda_device_present() {
  static const bool present = [] {
    int devices = 0;
    const bool ok = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    if (!ok) cudaGetLastError();  // so later CUDA calls do not report this error
    return ok;
  }();
  return present;
}

}  // namespace

Memory memory_type_of(const void *p) {
  if (p == nullptr || !cuda_device_present()) return Memory::host;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return Memory::host;
  }
  return attr.type == cudaMemoryTypeDevice ? Memory::cuda : Memory::host;
}

#else

Memory memory_type_of(const void *) { return Memory::host; }

#endif

}  // namespace bagua
