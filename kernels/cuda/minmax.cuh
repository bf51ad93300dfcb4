// The min-max codecs (q8, q4) on the GPU, written once: one thread block per
// codec block. Encoding is one kernel: a fused min/max/non-finite reduction,
// then quantization of the (now cached) block. Decoding validates all headers
// in a first kernel so a corrupt buffer leaves the output untouched. A codec
// supplies a struct C: kTag, kLevels, kElemsPerByte (1 or 2), block_bytes(n)
// (host and device), encoded_bytes(count, block) (host), pack(q) (a payload
// byte of the quantized values q[0, kElemsPerByte)) and value(byte, k) (the
// quantized value k of a payload byte). Threads move the payload 16 bytes at
// a time (kChunkElems elements), and the elements in runs of 16-byte words
// where they are aligned (Dev in common.cuh).
#ifndef BAGUA_KERNELS_CUDA_MINMAX_CUH
#define BAGUA_KERNELS_CUDA_MINMAX_CUH

#include "common.cuh"

namespace bagua::codec::gpu {

// Reduces min and max over the thread block; thread 0 gets the results.
__device__ inline void block_minmax(float &mn, float &mx) {
  __shared__ float wmin[kThreads / 32], wmax[kThreads / 32];
  for (int off = 16; off > 0; off /= 2) {
    mn = fminf(mn, __shfl_xor_sync(kFullMask, mn, off));
    mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, off));
  }
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    wmin[warp] = mn;
    wmax[warp] = mx;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (unsigned w = 1; w < blockDim.x / 32; ++w) {
      mn = fminf(mn, wmin[w]);
      mx = fmaxf(mx, wmax[w]);
    }
  }
}

// Elements of a 16-byte payload chunk.
template <class C>
constexpr uint32_t kChunkElems = 16 * C::kElemsPerByte;

// Elements of the run of at most `run` that starts at i of a block of n.
__device__ inline uint32_t run_len(uint32_t n, uint32_t i, uint32_t run) {
  return i >= n ? 0 : n - i < run ? n - i : run;
}

// The payload chunk of v[0, valid): quantized and packed, 0 past valid.
template <class C>
__device__ uint4 minmax_pack_chunk(const MinMaxParams &p, const float (&v)[kChunkElems<C>],
                                   uint32_t valid) {
  union {
    uint4 bits;
    uint8_t bytes[16];
  } chunk;
#pragma unroll
  for (uint32_t b = 0; b < 16; ++b) {
    uint8_t q[C::kElemsPerByte];
#pragma unroll
    for (uint32_t k = 0; k < C::kElemsPerByte; ++k) {
      const uint32_t e = b * C::kElemsPerByte + k;
      q[k] = e < valid ? minmax_quantize(p, v[e]) : 0;
    }
    chunk.bytes[b] = C::pack(q);
  }
  return chunk.bits;
}

template <class C, class E>
__global__ void minmax_encode_kernel(const typename E::T *src, size_t count, uint32_t block_elems,
                                     uint8_t *out) {
  __shared__ MinMaxBlockHeader header;
  constexpr uint32_t kWord = E::kPerWord, kChunk = kChunkElems<C>;
  const size_t first = size_t(blockIdx.x) * block_elems;
  const uint32_t n = block_len(count, first, block_elems);
  const typename E::T *x = src + first;
  uint8_t *blk = out + size_t(blockIdx.x) * C::block_bytes(block_elems);
  // Pass 1: min, max and non-finite over the block, a word of elements a step.
  float mn = INFINITY, mx = -INFINITY;
  int bad = 0;
  for (uint32_t i = threadIdx.x * kWord; i < n; i += blockDim.x * kWord) {
    float v[kWord] = {};
    const uint32_t valid = run_len(n, i, kWord);
    E::load_run(x, i, valid, v);
    for (uint32_t k = 0; k < valid; ++k) {
      bad |= !is_finite(v[k]);
      mn = fminf(mn, v[k]);
      mx = fmaxf(mx, v[k]);
    }
  }
  bad = __syncthreads_or(bad);
  block_minmax(mn, mx);
  if (threadIdx.x == 0) {
    header = minmax_make_header(mn, mx, bad, n, C::kTag);
    *reinterpret_cast<MinMaxBlockHeader *>(blk) = header;
  }
  __syncthreads();
  // Pass 2: the padded payload, a 16-byte chunk a step (the block's elements
  // are in cache from pass 1); a non-finite block's payload is zeros.
  const MinMaxParams p = minmax_params(header.min, header.max, C::kLevels);
  auto *q = reinterpret_cast<uint4 *>(blk + sizeof(MinMaxBlockHeader));
  const uint32_t chunks = uint32_t(C::block_bytes(n) - sizeof(MinMaxBlockHeader)) / 16;
  for (uint32_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    const uint32_t i = c * kChunk, valid = run_len(n, i, kChunk);
    float v[kChunk] = {};
    E::load_run(x, i, valid, v);
    q[c] = bad ? make_uint4(0, 0, 0, 0) : minmax_pack_chunk<C>(p, v, valid);
  }
}

template <class C>
__global__ void minmax_validate_kernel(const uint8_t *in, size_t count, uint32_t block_elems,
                                       size_t blocks, uint32_t *status) {
  const size_t stride = C::block_bytes(block_elems);
  for (size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += size_t(gridDim.x) * blockDim.x) {
    const auto &h = *reinterpret_cast<const MinMaxBlockHeader *>(in + b * stride);
    if (!minmax_header_valid(h, block_len(count, b * block_elems, block_elems), C::kTag)) {
      report_corrupt(status);
    }
  }
}

// A 16-byte payload chunk a step: its elements decoded into the sink.
template <class C, class Sink>
__global__ void minmax_decode_kernel(const uint8_t *in, size_t count, uint32_t block_elems,
                                     Sink sink, const uint32_t *status) {
  if (*status != 0) return;
  constexpr uint32_t kChunk = kChunkElems<C>;
  const size_t first = size_t(blockIdx.x) * block_elems;
  const uint32_t n = block_len(count, first, block_elems);
  const uint8_t *blk = in + size_t(blockIdx.x) * C::block_bytes(block_elems);
  const MinMaxBlockHeader h = *reinterpret_cast<const MinMaxBlockHeader *>(blk);
  const MinMaxParams p = minmax_params(h.min, h.max, C::kLevels);
  const auto *q = reinterpret_cast<const uint4 *>(blk + sizeof h);
  const bool non_finite = h.flags & kFlagNonFinite;
  for (uint32_t i = threadIdx.x * kChunk; i < n; i += blockDim.x * kChunk) {
    const uint32_t valid = run_len(n, i, kChunk);
    if (non_finite) {
      sink.nan_run(first + i, valid);
      continue;
    }
    union {
      uint4 bits;
      uint8_t bytes[16];
    } chunk;
    chunk.bits = q[i / kChunk];
    float v[kChunk];
#pragma unroll
    for (uint32_t e = 0; e < kChunk; ++e) {
      const uint8_t byte = chunk.bytes[e / C::kElemsPerByte];
      v[e] = minmax_dequantize(p, C::value(byte, e % C::kElemsPerByte));
    }
    sink.put_run(first + i, v, valid);
  }
}

inline size_t minmax_block_count(size_t count, uint32_t block_elems) {
  return (count + block_elems - 1) / block_elems;
}

template <class C>
CodecStatus minmax_encode(const void *src, DType t, size_t count, uint32_t block_elems, void *out,
                          cudaStream_t stream) {
  if (!block_elems_valid(block_elems) || (count > 0 && (src == nullptr || out == nullptr)) ||
      !aligned16(out)) {
    return CodecStatus::bad_argument;
  }
  const size_t blocks = minmax_block_count(count, block_elems);
  if (blocks == 0) return CodecStatus::ok;
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    minmax_encode_kernel<C, E><<<unsigned(blocks), kThreads, 0, stream>>>(
        static_cast<const typename E::T *>(src), count, block_elems, static_cast<uint8_t *>(out));
    return launch_status();
  });
}

template <class C, class Sink>
CodecStatus minmax_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                          const void *dst, Sink sink, uint32_t *status, cudaStream_t stream) {
  if (!block_elems_valid(block_elems)) return CodecStatus::bad_argument;
  const CodecStatus s =
      check_decode(in, in_bytes, C::encoded_bytes(count, block_elems), count, dst, status, stream);
  const size_t blocks = minmax_block_count(count, block_elems);
  if (s != CodecStatus::ok || blocks == 0) return s;
  const auto *bytes = static_cast<const uint8_t *>(in);
  minmax_validate_kernel<C><<<grid_for(blocks, kThreads), kThreads, 0, stream>>>(
      bytes, count, block_elems, blocks, status);
  minmax_decode_kernel<C>
      <<<unsigned(blocks), kThreads, 0, stream>>>(bytes, count, block_elems, sink, status);
  return launch_status();
}

template <class C>
CodecStatus minmax_decode_into(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                               void *dst, DType t, uint32_t *status, cudaStream_t stream) {
  return decode_into(t, dst, [&](auto sink) {
    return minmax_decode<C>(in, in_bytes, count, block_elems, dst, sink, status, stream);
  });
}

template <class C>
CodecStatus minmax_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                     uint32_t block_elems, float *acc, uint32_t *status,
                                     cudaStream_t stream) {
  return minmax_decode<C>(in, in_bytes, count, block_elems, acc, AccumulateSink{acc}, status,
                          stream);
}

}  // namespace bagua::codec::gpu

// Defines the entry points of codec_cuda.h of the min-max codec `name` (q8,
// q4) whose payload layer is the struct C of namespace gpu.
#define BAGUA_DEFINE_MINMAX_CODEC_GPU(name, C)                                                   \
  namespace bagua::codec::gpu {                                                                  \
  CodecStatus name##_encode(const void *src, DType t, size_t count, uint32_t block_elems,        \
                            void *out, cudaStream_t stream) {                                    \
    return minmax_encode<C>(src, t, count, block_elems, out, stream);                            \
  }                                                                                              \
  CodecStatus name##_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems, \
                            void *dst, DType t, uint32_t *status, cudaStream_t stream) {         \
    return minmax_decode_into<C>(in, in_bytes, count, block_elems, dst, t, status, stream);      \
  }                                                                                              \
  CodecStatus name##_decode_accumulate(const void *in, size_t in_bytes, size_t count,            \
                                       uint32_t block_elems, float *acc, uint32_t *status,       \
                                       cudaStream_t stream) {                                    \
    return minmax_decode_accumulate<C>(in, in_bytes, count, block_elems, acc, status, stream);   \
  }                                                                                              \
  }

#endif
