// GPU adapters of the compressed allreduce: the ChunkCodec of q8, q4 and fp16 /
// bf16 cast for device buffers. Element buffers and the reduce accumulator
// are device memory; encoded segments are the schedule's host slots. Encode
// runs the CUDA kernel into device staging and copies only the encoded bytes
// to the host (through a pinned buffer); decode copies encoded bytes to the
// device and decodes there. No CUDA header needed here (streams are passed
// as void *, nullptr = the default stream).
#pragma once

#include <memory>

#include "../algo/compressed.hpp"

namespace bagua {

// The device codec of `wire` (q8, q4, fp16, bf16), or nullptr for a wire format
// without one and in a build without CUDA. Prescales as make_cast_codec.
std::unique_ptr<ChunkCodec> make_device_codec(Wire wire, uint32_t block,
                                              float contribution_prescale, float reduced_prescale,
                                              void *stream);

}  // namespace bagua
