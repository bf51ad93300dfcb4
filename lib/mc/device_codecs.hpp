// The device adapters of the compressed allreduce: the ChunkCodec of q8, q4
// and fp16 / bf16 cast for device buffers, on any Device. Element buffers
// and the reduce accumulator are device memory; encoded segments are the
// schedule's host slots. Encode runs the device kernel into device scratch
// and copies only the encoded bytes to the host (through page-locked
// scratch); decode copies encoded bytes to the device and decodes there.
// Every buffer is the communicator's DeviceScratch: a call allocates nothing
// once the scratch has grown to its size.
#pragma once

#include <memory>

#include "../algo/compressed.hpp"
#include "device_scratch.hpp"

namespace bagua {

// The device codec of `wire` (q8, q4, fp16, bf16) on scratch's device, its
// work enqueued on `stream`; nullptr for a wire format without one. The
// prescales are make_cast_codec's.
std::unique_ptr<ChunkCodec> make_device_codec(Wire wire, uint32_t block,
                                              float contribution_prescale, float reduced_prescale,
                                              DeviceScratch &scratch, void *stream);

}  // namespace bagua
