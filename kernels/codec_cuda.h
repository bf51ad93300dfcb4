// Compression codecs on device memory: the CUDA twins of codec.h, writing and
// reading exactly the same bytes (kernels/codec_format.h). Every function
// enqueues its kernels on `stream` and returns after the launch; the host-side
// checks (block size, dtype, pointers, exact length) are reported at once,
// launch failures as CodecStatus::device_error.
//
// Pointers are device pointers. Encoded buffers must be 16-byte aligned
// (cudaMalloc gives 256) and element buffers naturally aligned.
//
// Decoders take `status`, a device uint32_t they reset to 0 and set to a
// CodecStatus value when a header is invalid; in that case nothing is written
// to dst / acc. Read it after synchronizing the stream.
#ifndef BAGUA_KERNELS_CODEC_CUDA_H
#define BAGUA_KERNELS_CODEC_CUDA_H

#include <cuda_runtime_api.h>

#include "codec.h"

namespace bagua::codec::gpu {

CodecStatus q8_encode(const void *src, DType t, size_t count, uint32_t block_elems, void *out,
                      cudaStream_t stream);
CodecStatus q8_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t, uint32_t *status, cudaStream_t stream);
CodecStatus q8_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc, uint32_t *status,
                                 cudaStream_t stream);

CodecStatus q4_encode(const void *src, DType t, size_t count, uint32_t block_elems, void *out,
                      cudaStream_t stream);
CodecStatus q4_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                      void *dst, DType t, uint32_t *status, cudaStream_t stream);
CodecStatus q4_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                 uint32_t block_elems, float *acc, uint32_t *status,
                                 cudaStream_t stream);

CodecStatus cast_encode(const void *src, DType t, size_t count, CastFormat format, float prescale,
                        void *out, cudaStream_t stream);
CodecStatus cast_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t,
                        uint32_t *status, cudaStream_t stream);
CodecStatus cast_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc,
                                   uint32_t *status, cudaStream_t stream);

CodecStatus sign_encode_with_feedback(const float *g, float *residual, size_t count,
                                      uint32_t block_elems, void *out, cudaStream_t stream);
CodecStatus sign_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                        void *dst, DType t, uint32_t *status, cudaStream_t stream);
CodecStatus sign_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                   uint32_t block_elems, float *acc, uint32_t *status,
                                   cudaStream_t stream);

CodecStatus mxfp8_encode(const void *src, DType t, size_t count, void *out, cudaStream_t stream);
CodecStatus mxfp8_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t,
                         uint32_t *status, cudaStream_t stream);
CodecStatus mxfp8_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc,
                                    uint32_t *status, cudaStream_t stream);

// Every device codec in one shape (codec.h's HostCodecKernels, the
// encoded size being the host's).
struct DeviceCodecKernels {
  const char *wire;
  CodecStatus (*encode)(const CodecParams &p, const void *src, DType t, size_t count, void *out,
                        cudaStream_t stream);
  CodecStatus (*decode)(const CodecParams &p, const void *in, size_t in_bytes, size_t count,
                        void *dst, DType t, uint32_t *status, cudaStream_t stream);
  CodecStatus (*decode_accumulate)(const CodecParams &p, const void *in, size_t in_bytes,
                                   size_t count, float *acc, uint32_t *status, cudaStream_t stream);
};

// The device kernels of the wire named `wire`; nullptr when none has that name.
const DeviceCodecKernels *find_device_kernels(const char *wire);

}  // namespace bagua::codec::gpu

#endif
