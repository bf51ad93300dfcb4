// The device adapter of the compressed allreduce: the ChunkCodec of every
// wire of the registry for device buffers, on any Device. Element buffers
// and the reduce accumulator are device memory; encoded segments are the
// schedule's host slots. Encode runs the device kernel into device scratch
// and copies only the encoded bytes to the host (through page-locked
// scratch); decode copies encoded bytes to the device and decodes there.
// Every buffer is the communicator's DeviceScratch: a call allocates nothing
// once the scratch has grown to its size.
#pragma once

#include <memory>

#include "../algo/compressed.hpp"
#include "../mc/device_scratch.hpp"

namespace bagua {

// The device codec of `wire` on scratch's device, its work enqueued on
// `stream`; nullptr for exact. setup's residuals are device memory.
std::unique_ptr<ChunkCodec> make_device_codec(const WireInfo &wire, const CodecSetup &setup,
                                              DeviceScratch &scratch, void *stream);

}  // namespace bagua
