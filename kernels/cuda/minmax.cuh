// The min-max codecs (q8, q4) on the GPU, written once. Encoding is one
// kernel that reads each codec block twice, for min/max/non-finite and then
// to quantize: a group of lanes per block for small blocks (one lane per
// payload chunk of 16 elements, min and max by shuffles), a warp per block for
// larger ones (the second read from the L2 cache). Decoding validates all
// headers in a first kernel so a corrupt buffer leaves the output
// untouched, then decodes a payload chunk per thread. A codec supplies a
// struct C: kTag, kLevels, kElemsPerByte (1 or 2), block_bytes(n) (host and
// device), encoded_bytes(count, block) (host), pack(q) (a payload byte of
// the quantized values q[0, kElemsPerByte)) and value(byte, k) (the
// quantized value k of a payload byte). Elements move in runs of 16-byte
// words where they are aligned (Dev in common.cuh).
#ifndef BAGUA_KERNELS_CUDA_MINMAX_CUH
#define BAGUA_KERNELS_CUDA_MINMAX_CUH

#include <type_traits>

#include "common.cuh"

namespace bagua::codec::gpu {

// Elements of a payload chunk (a thread's unit of work).
template <class C>
constexpr uint32_t kChunkElems = 16;

// A payload chunk: the bytes of kChunkElems elements (q8 16, q4 8), moved as
// one vector.
template <class C>
struct Chunk {
  static constexpr uint32_t kBytes = kChunkElems<C> / C::kElemsPerByte;
  using Vec = std::conditional_t<kBytes == 16, uint4, uint2>;
  union {
    Vec vec;
    uint8_t bytes[kBytes];
  };
};

// The payload chunk of v[0, valid): quantized by `quantize` and packed, 0
// past valid.
template <class C, class Quantize>
__device__ typename Chunk<C>::Vec minmax_pack_chunk_with(const float (&v)[kChunkElems<C>],
                                                         uint32_t valid, Quantize quantize) {
  Chunk<C> chunk;
#pragma unroll
  for (uint32_t b = 0; b < Chunk<C>::kBytes; ++b) {
    uint8_t q[C::kElemsPerByte];
#pragma unroll
    for (uint32_t k = 0; k < C::kElemsPerByte; ++k) {
      const uint32_t e = b * C::kElemsPerByte + k;
      q[k] = e < valid ? quantize(v[e]) : 0;
    }
    chunk.bytes[b] = C::pack(q);
  }
  return chunk.vec;
}

// The payload chunk of v[0, valid) (minmax_quantize). A whole chunk of a
// narrow block, the common case, takes a path without a branch per
// element: with a branch on p.wide and on valid per element, Nsight Compute
// read the encoders as bound by their instructions (68% of the SM's issue
// throughput at half the DRAM rate; doc/benchmarks.md, "Device buffers on the H200").
template <class C>
__device__ typename Chunk<C>::Vec minmax_pack_chunk(const MinMaxParams &p,
                                                    const float (&v)[kChunkElems<C>],
                                                    uint32_t valid) {
  if (!p.wide && valid == kChunkElems<C>) {
    return minmax_pack_chunk_with<C>(v, kChunkElems<C>,
                                     [&](float x) { return minmax_quantize_narrow(p, x); });
  }
  return minmax_pack_chunk_with<C>(v, valid, [&](float x) { return minmax_quantize(p, x); });
}

// The payload of a block of n elements, as chunks.
template <class C>
__device__ typename Chunk<C>::Vec *minmax_payload(uint8_t *blk) {
  return reinterpret_cast<typename Chunk<C>::Vec *>(blk + sizeof(MinMaxBlockHeader));
}
template <class C>
__device__ uint32_t minmax_chunks_of(uint32_t n) {
  return uint32_t(C::block_bytes(n) - sizeof(MinMaxBlockHeader)) / Chunk<C>::kBytes;
}

// Min, max and non-finite of v[0, valid), folded into the running ones
// (a whole run without a branch per element).
template <uint32_t N>
__device__ void minmax_fold(const float (&v)[N], uint32_t valid, float &mn, float &mx, int &bad) {
  const auto fold = [&](float x) {
    bad |= !is_finite(x);
    mn = fminf(mn, x);
    mx = fmaxf(mx, x);
  };
  if (valid == N) {
#pragma unroll
    for (uint32_t k = 0; k < N; ++k) fold(v[k]);
    return;
  }
#pragma unroll
  for (uint32_t k = 0; k < N; ++k) {
    if (k < valid) fold(v[k]);
  }
}

// Larger blocks: a warp per codec block, each lane reading chunks lane,
// lane + 32, ... twice: for min and max, then (from the cache, mostly) to
// quantize them.
template <class C, class E>
__global__ void minmax_encode_warp_kernel(const typename E::T *src, size_t count,
                                          uint32_t block_elems, size_t blocks, uint8_t *out) {
  constexpr uint32_t kChunk = kChunkElems<C>;
  const unsigned lane = threadIdx.x % 32;
  const size_t warps = size_t(gridDim.x) * blockDim.x / 32;
  for (size_t b = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; b < blocks; b += warps) {
    const size_t first = b * block_elems;
    const uint32_t n = block_len(count, first, block_elems);
    const typename E::T *x = src + first;
    uint8_t *blk = out + b * C::block_bytes(block_elems);
    const uint32_t chunks = minmax_chunks_of<C>(n);
    // Pass 1: min, max and non-finite over the block.
    float mn = INFINITY, mx = -INFINITY;
    int bad = 0;
#pragma unroll 4
    for (uint32_t c = lane; c < chunks; c += 32) {
      float v[kChunk] = {};
      const uint32_t valid = run_len(n, c * kChunk, kChunk);
      E::load_run(x, c * kChunk, valid, v);
      minmax_fold(v, valid, mn, mx, bad);
    }
    for (int off = 16; off > 0; off /= 2) {
      mn = fminf(mn, __shfl_xor_sync(kFullMask, mn, off));
      mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, off));
      bad |= __shfl_xor_sync(kFullMask, bad, off);
    }
    const MinMaxBlockHeader h = minmax_make_header(mn, mx, bad, n, C::kTag);
    if (lane == 0) *reinterpret_cast<MinMaxBlockHeader *>(blk) = h;
    // Pass 2: the padded payload; a non-finite block's is zeros.
    const MinMaxParams p = minmax_params(h.min, h.max, C::kLevels);
    auto *q = minmax_payload<C>(blk);
#pragma unroll 4
    for (uint32_t c = lane; c < chunks; c += 32) {
      float v[kChunk] = {};
      const uint32_t valid = run_len(n, c * kChunk, kChunk);
      E::load_run(x, c * kChunk, valid, v);
      q[c] = bad ? typename Chunk<C>::Vec{} : minmax_pack_chunk<C>(p, v, valid);
    }
  }
}

// Blocks of at most 32 payload chunks (512 elements; q4's default 256):
// a group of `group` lanes (the chunks of a whole block, a power of two)
// encodes one codec block, each lane one chunk, and min and max are reduced
// by shuffles within the group, so a warp encodes 32 / group blocks at once.
template <class C, class E>
__global__ void minmax_encode_grouped_kernel(const typename E::T *src, size_t count,
                                             uint32_t block_elems, size_t blocks, uint32_t group,
                                             uint8_t *out) {
  constexpr uint32_t kChunk = kChunkElems<C>;
  const size_t thread = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t b = thread / group;
  const uint32_t lane = uint32_t(thread % group);
  // Lanes past the last block load nothing but take part in the shuffles.
  const size_t first = b < blocks ? b * block_elems : 0;
  const uint32_t n = b < blocks ? block_len(count, first, block_elems) : 0;
  float v[kChunk] = {};
  const uint32_t valid = run_len(n, lane * kChunk, kChunk);
  E::load_run(src + first, lane * kChunk, valid, v);
  float mn = INFINITY, mx = -INFINITY;
  int bad = 0;
  minmax_fold(v, valid, mn, mx, bad);
  for (uint32_t off = 1; off < group; off *= 2) {
    mn = fminf(mn, __shfl_xor_sync(kFullMask, mn, off));
    mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, off));
    bad |= __shfl_xor_sync(kFullMask, bad, off);
  }
  if (b >= blocks) return;
  uint8_t *blk = out + b * C::block_bytes(block_elems);
  const MinMaxBlockHeader h = minmax_make_header(mn, mx, bad, n, C::kTag);
  if (lane == 0) *reinterpret_cast<MinMaxBlockHeader *>(blk) = h;
  const uint32_t chunks = minmax_chunks_of<C>(n);
  if (lane >= chunks) return;
  const MinMaxParams p = minmax_params(h.min, h.max, C::kLevels);
  minmax_payload<C>(blk)[lane] = bad ? typename Chunk<C>::Vec{} : minmax_pack_chunk<C>(p, v, valid);
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

// One payload chunk per thread step, over the chunks of all blocks
// (a block's last ones may hold no elements): decoded into the sink.
template <class C, class Sink>
__global__ void minmax_decode_kernel(const uint8_t *in, size_t count, uint32_t block_elems,
                                     size_t blocks, Sink sink, const uint32_t *status) {
  if (*status != 0) return;
  constexpr uint32_t kChunk = kChunkElems<C>;
  const uint32_t per_block = block_elems / kChunk;
  for (size_t c = size_t(blockIdx.x) * blockDim.x + threadIdx.x; c < blocks * per_block;
       c += size_t(gridDim.x) * blockDim.x) {
    const size_t b = c / per_block, first = b * block_elems;
    const uint32_t i = uint32_t(c % per_block) * kChunk;
    const uint32_t valid = run_len(block_len(count, first, block_elems), i, kChunk);
    if (valid == 0) continue;
    const uint8_t *blk = in + b * C::block_bytes(block_elems);
    const MinMaxBlockHeader h = *reinterpret_cast<const MinMaxBlockHeader *>(blk);
    if (h.flags & kFlagNonFinite) {
      sink.nan_run(first + i, valid);
      continue;
    }
    const MinMaxParams p = minmax_params(h.min, h.max, C::kLevels);
    Chunk<C> chunk;
    chunk.vec = reinterpret_cast<const typename Chunk<C>::Vec *>(blk + sizeof h)[i / kChunk];
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

// Payload chunks of a whole block (a power of two: 16-element chunks of a
// power-of-two block of at least 64 elements).
template <class C>
uint32_t minmax_chunks(uint32_t block_elems) {
  return uint32_t((C::block_bytes(block_elems) - sizeof(MinMaxBlockHeader)) / Chunk<C>::kBytes);
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
    const auto *x = static_cast<const typename E::T *>(src);
    auto *encoded = static_cast<uint8_t *>(out);
    const uint32_t chunks = minmax_chunks<C>(block_elems);
    if (chunks <= 32) {
      // One thread per chunk: the grid is not capped as grid_for's is.
      const unsigned grid = unsigned((blocks * chunks + kThreads - 1) / kThreads);
      minmax_encode_grouped_kernel<C, E>
          <<<grid, kThreads, 0, stream>>>(x, count, block_elems, blocks, chunks, encoded);
    } else {
      minmax_encode_warp_kernel<C, E>
          <<<grid_for_warps(blocks), kThreads, 0, stream>>>(x, count, block_elems, blocks, encoded);
    }
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
      <<<grid_for(blocks * (block_elems / kChunkElems<C>), kThreads), kThreads, 0, stream>>>(
          bytes, count, block_elems, blocks, sink, status);
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
