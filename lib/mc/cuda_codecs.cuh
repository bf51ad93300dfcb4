// Element-wise kernels of the compressed allreduce's reduce step on device
// memory (cuda_codecs.cu). Plain declarations, so both nvcc and
// the C++ compiler read them; streams are cudaStream_t passed as void *.
#pragma once

#include "codec.h"

namespace bagua {

// Element-wise kernels of the reduce step (cuda_codecs.cu), enqueued on
// `stream`: out = src as float32; acc /= divisor; dst = acc in type t.
codec::CodecStatus gpu_load_as_float(const void *src, DType t, size_t count, float *out,
                                     void *stream);
codec::CodecStatus gpu_divide(float *acc, size_t count, float divisor, void *stream);
codec::CodecStatus gpu_store_from_float(const float *acc, size_t count, void *dst, DType t,
                                        void *stream);

}  // namespace bagua
