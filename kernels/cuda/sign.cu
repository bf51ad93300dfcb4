// 1-bit sign codec on the GPU. Encoding uses one warp per codec block: lane j
// sums |v| of elements j, j + 32, ... in double and the warp combines lanes by
// halving, the order codec_format.h fixes, so the scale matches the CPU bit
// for bit; ballots then assemble 32 sign bits per word.
#include "common.cuh"

namespace bagua::codec::gpu {
namespace {

// g + residual, saturated like the CPU's (codec_format.h).
__device__ float fed(const float *g, const float *r, size_t i) {
  return r ? saturating_add(g[i], r[i]) : g[i];
}

// Lane sums combined by halving, the order codec_format.h fixes; every lane
// gets the total.
__device__ double warp_combine(double sum) {
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(kFullMask, sum, off);
  return __shfl_sync(kFullMask, sum, 0);
}

__device__ double warp_abs_sum(const float *g, const float *r, uint32_t n, unsigned lane) {
  double sum = 0.0;
  // Unrolled so that several loads are in flight; the additions keep their order.
#pragma unroll 8
  for (uint32_t i = lane; i < n; i += 32) sum += double(fabsf(fed(g, r, i)));
  return warp_combine(sum);
}

// One warp per codec block, reading its g and residual twice: for the sum,
// then for the sign bits (from the cache, mostly).
__global__ void encode_kernel(const float *g, float *residual, size_t count, uint32_t block_elems,
                              size_t blocks, uint8_t *out) {
  const unsigned lane = threadIdx.x % 32;
  const size_t warps = size_t(gridDim.x) * blockDim.x / 32;
  for (size_t b = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; b < blocks; b += warps) {
    const size_t first = b * block_elems;
    const uint32_t n = block_len(count, first, block_elems);
    const float *gb = g + first;
    float *rb = residual ? residual + first : nullptr;
    const SignBlockHeader h = sign_make_header(warp_abs_sum(gb, rb, n, lane), n);
    uint8_t *blk = out + b * sign_block_bytes(block_elems);
    if (lane == 0) *reinterpret_cast<SignBlockHeader *>(blk) = h;
    auto *words = reinterpret_cast<uint32_t *>(blk + sizeof h);
    const bool encode = !(h.flags & kFlagNonFinite);
    // Word k holds elements 32k .. 32k + 31; lanes past n vote 0 (padding).
    for (uint32_t k = 0; k < round_up(n, 64) / 32; ++k) {
      const uint32_t i = k * 32 + lane;
      bool neg = false;
      if (encode && i < n) {
        const float v = fed(gb, rb, i);
        neg = sign_bit(v);
        if (rb) rb[i] = v - sign_value(h.scale, neg);
      }
      const uint32_t word = __ballot_sync(kFullMask, neg);
      if (lane == 0) words[k] = word;
    }
  }
}

__global__ void validate_kernel(const uint8_t *in, size_t blocks, uint32_t block_elems,
                                uint32_t *status) {
  const size_t stride = sign_block_bytes(block_elems);
  for (size_t b = size_t(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks;
       b += size_t(gridDim.x) * blockDim.x) {
    if (!sign_header_valid(*reinterpret_cast<const SignBlockHeader *>(in + b * stride))) {
      report_corrupt(status);
    }
  }
}

// The elements of one payload byte (a run that never crosses a block).
constexpr uint32_t kRun = 8;

template <class Sink>
__global__ void decode_kernel(const uint8_t *in, size_t count, uint32_t block_elems, Sink sink,
                              const uint32_t *status) {
  if (*status != 0) return;
  const size_t stride = sign_block_bytes(block_elems), runs = round_up(count, kRun) / kRun;
  for (size_t r = size_t(blockIdx.x) * blockDim.x + threadIdx.x; r < runs;
       r += size_t(gridDim.x) * blockDim.x) {
    const size_t i = r * kRun;
    const uint32_t valid = run_len(count, i, kRun);
    const uint8_t *blk = in + i / block_elems * stride;
    const SignBlockHeader h = *reinterpret_cast<const SignBlockHeader *>(blk);
    if (h.flags & kFlagNonFinite) {
      sink.nan_run(i, valid);
      continue;
    }
    const uint8_t bits = blk[sizeof h + uint32_t(i % block_elems) / 8];
    float v[kRun];
#pragma unroll
    for (uint32_t k = 0; k < kRun; ++k) v[k] = sign_value(h.scale, (bits >> k) & 1);
    sink.put_run(i, v, valid);
  }
}

size_t block_count(size_t count, uint32_t block_elems) {
  return (count + block_elems - 1) / block_elems;
}

template <class Sink>
CodecStatus decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                   const void *dst, Sink sink, uint32_t *status, cudaStream_t stream) {
  if (!block_elems_valid(block_elems)) return CodecStatus::bad_argument;
  const CodecStatus s = check_decode(in, in_bytes, sign_encoded_bytes(count, block_elems), count,
                                     dst, status, stream);
  const size_t blocks = block_count(count, block_elems);
  if (s != CodecStatus::ok || blocks == 0) return s;
  const auto *bytes = static_cast<const uint8_t *>(in);
  validate_kernel<<<grid_for(blocks, kThreads), kThreads, 0, stream>>>(bytes, blocks, block_elems,
                                                                       status);
  decode_kernel<<<grid_for(round_up(count, kRun) / kRun, kThreads), kThreads, 0, stream>>>(
      bytes, count, block_elems, sink, status);
  return launch_status();
}

}  // namespace

CodecStatus sign_encode_with_feedback(const float *g, float *residual, size_t count,
                                      uint32_t block_elems, void *out, cudaStream_t stream) {
  if (!block_elems_valid(block_elems) || (count > 0 && (g == nullptr || out == nullptr)) ||
      !aligned16(out)) {
    return CodecStatus::bad_argument;
  }
  const size_t blocks = block_count(count, block_elems);
  if (blocks == 0) return CodecStatus::ok;
  const unsigned grid = grid_for_warps(blocks);
  encode_kernel<<<grid, kThreads, 0, stream>>>(g, residual, count, block_elems, blocks,
                                               static_cast<uint8_t *>(out));
  return launch_status();
}

CodecStatus sign_decode(const void *in, size_t in_bytes, size_t count, uint32_t block_elems,
                        void *dst, DType t, uint32_t *status, cudaStream_t stream) {
  return decode_into(t, dst, [&](auto sink) {
    return decode(in, in_bytes, count, block_elems, dst, sink, status, stream);
  });
}

CodecStatus sign_decode_accumulate(const void *in, size_t in_bytes, size_t count,
                                   uint32_t block_elems, float *acc, uint32_t *status,
                                   cudaStream_t stream) {
  return decode(in, in_bytes, count, block_elems, acc, AccumulateSink{acc}, status, stream);
}

}  // namespace bagua::codec::gpu
