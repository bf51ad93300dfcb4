// MXFP8 codec on the GPU: one warp per block of 32 elements, a lane per
// element; the block's largest magnitude and finiteness are warp reductions,
// the per-element formulas are codec_format.h's (the CPU twin's bytes and
// values by construction).
#include "common.cuh"

namespace bagua::codec::gpu {
namespace {

static_assert(kMxBlockElems == 32, "one lane per element of a block");

// Whole warps stride over the blocks.
__device__ inline size_t warp_index() {
  return (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
}
__device__ inline size_t warp_count() { return size_t(gridDim.x) * blockDim.x / 32; }

template <class E>
__global__ void encode_kernel(const typename E::T *x, MxHeader header, uint8_t *out) {
  const size_t count = header.count, blocks = mx_blocks(count);
  if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<MxHeader *>(out) = header;
  uint8_t *scales = out + sizeof header;
  uint8_t *elems = scales + round_up(blocks, 16);
  const unsigned lane = threadIdx.x % 32;
  for (size_t b = warp_index(); b < blocks; b += warp_count()) {
    const size_t i = b * kMxBlockElems + lane;
    const bool valid = i < count;
    const float v = valid ? E::load(x, i) : 0.0f;
    const bool finite = __all_sync(kFullMask, is_finite(v));
    float amax = fabsf(v);
    // Butterfly: every lane ends with the block's largest magnitude.
    for (int offset = 16; offset > 0; offset >>= 1)
      amax = fmaxf(amax, __shfl_xor_sync(kFullMask, amax, offset));
    const uint8_t scale = finite ? mx_scale_byte(amax) : kMxNonFiniteScale;
    if (lane == 0) scales[b] = scale;
    if (valid) elems[i] = finite ? mx_quantize(v, scale) : 0;
  }
}

template <class E>
__device__ void put_one(const StoreSink<E> &s, size_t i, float v) {
  E::store(s.dst, i, v);
}
__device__ inline void put_one(const AccumulateSink &s, size_t i, float v) {
  s.acc[i] = saturating_add(s.acc[i], v);
}
template <class E>
__device__ void put_nan(const StoreSink<E> &s, size_t i) {
  E::store(s.dst, i, canonical_nan());
}
__device__ inline void put_nan(const AccumulateSink &s, size_t i) { s.acc[i] = canonical_nan(); }

template <class Sink>
__global__ void decode_kernel(const uint8_t *in, size_t count, Sink sink, uint32_t *status) {
  const MxHeader header = *reinterpret_cast<const MxHeader *>(in);
  if (!mx_header_valid(header, count)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) report_corrupt(status);
    return;
  }
  const size_t blocks = mx_blocks(count);
  const uint8_t *scales = in + sizeof header;
  const uint8_t *elems = scales + round_up(blocks, 16);
  const unsigned lane = threadIdx.x % 32;
  for (size_t b = warp_index(); b < blocks; b += warp_count()) {
    const size_t i = b * kMxBlockElems + lane;
    if (i >= count) continue;
    const uint8_t scale = scales[b];
    if (scale == kMxNonFiniteScale)
      put_nan(sink, i);
    else
      put_one(sink, i, mx_dequantize(elems[i], mx_scale_value(scale)));
  }
}

template <class Sink>
CodecStatus decode(const void *in, size_t in_bytes, size_t count, const void *dst, Sink sink,
                   uint32_t *status, cudaStream_t stream) {
  const CodecStatus s =
      check_decode(in, in_bytes, mx_encoded_bytes(count), count, dst, status, stream);
  if (s != CodecStatus::ok) return s;
  decode_kernel<<<grid_for_warps(mx_blocks(count) + 1), kThreads, 0, stream>>>(
      static_cast<const uint8_t *>(in), count, sink, status);
  return launch_status();
}

}  // namespace

CodecStatus mxfp8_encode(const void *src, DType t, size_t count, void *out, cudaStream_t stream) {
  if (out == nullptr || !aligned16(out) || (count > 0 && src == nullptr))
    return CodecStatus::bad_argument;
  // The padding of both sections is zero.
  if (cudaMemsetAsync(out, 0, mx_encoded_bytes(count), stream) != cudaSuccess)
    return CodecStatus::device_error;
  const MxHeader header{kTagMx, 5, 0, 0, count};
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    encode_kernel<E><<<grid_for_warps(mx_blocks(count) + 1), kThreads, 0, stream>>>(
        static_cast<const typename E::T *>(src), header, static_cast<uint8_t *>(out));
    return launch_status();
  });
}

CodecStatus mxfp8_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t,
                         uint32_t *status, cudaStream_t stream) {
  return decode_into(
      t, dst, [&](auto sink) { return decode(in, in_bytes, count, dst, sink, status, stream); });
}

CodecStatus mxfp8_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc,
                                    uint32_t *status, cudaStream_t stream) {
  return decode(in, in_bytes, count, acc, AccumulateSink{acc}, status, stream);
}

}  // namespace bagua::codec::gpu
