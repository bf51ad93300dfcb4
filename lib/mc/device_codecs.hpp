// The device adapters of the compressed allreduce: the ChunkCodec of q8, q4,
// fp16 / bf16 cast and sign for device buffers, on any Device. Element buffers
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

// What a device codec needs; the indices of prescale and residual are
// ChunkCodec::Stage's (contribution, reduced chunk).
struct DeviceCodecParams {
  Wire wire;
  uint32_t block = 0;                       // q8, q4, sign
  float prescale[2] = {1, 1};               // fp16 / bf16, as make_cast_codec's
  float *residual[2] = {nullptr, nullptr};  // sign: device residuals, as make_sign_codec's
};

// The device codec of params.wire (q8, q4, fp16, bf16, sign) on scratch's
// device, its work enqueued on `stream`; nullptr for exact.
std::unique_ptr<ChunkCodec> make_device_codec(const DeviceCodecParams &params,
                                              DeviceScratch &scratch, void *stream);

}  // namespace bagua
