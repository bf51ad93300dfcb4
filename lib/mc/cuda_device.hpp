// The CUDA implementation of Device (cuda_device.cpp; cuda_unavailable.cpp
// in a build without CUDA).
#pragma once

#include "device.hpp"

namespace bagua {

// The process's CUDA device, or nullptr when the build has no CUDA or the
// runtime reports no usable device (asked once). Buffers are those of the
// device current on the calling thread.
Device *cuda_device();

}  // namespace bagua
