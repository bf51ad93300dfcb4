// GPU adapters of the compressed allreduce: the ChunkCodec of q8 and fp16 /
// bf16 cast for device buffers. Element buffers and the reduce accumulator
// are device memory; encoded segments are the schedule's host slots. Encode
// runs the CUDA kernel into device staging and copies only the encoded bytes
// to the host (through a pinned buffer); decode copies encoded bytes to the
// device and decodes there. Built only with CUDA; no CUDA header needed here
// (streams are passed as void *, nullptr = default stream).
#pragma once

#include <memory>

#include "compressed.hpp"

namespace bagua {

std::unique_ptr<ChunkCodec> make_gpu_q8_codec(uint32_t block, void *stream);
std::unique_ptr<ChunkCodec> make_gpu_cast_codec(codec::CastFormat format,
                                                float contribution_prescale,
                                                float reduced_prescale, void *stream);
}  // namespace bagua
