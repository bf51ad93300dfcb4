// Cast codec on the GPU: each thread step moves a run of kRun elements, one
// 16-byte word of the wire. The decoder checks the single header in every
// thread, so a corrupt header writes nothing.
#include "common.cuh"

namespace bagua::codec::gpu {
namespace {

constexpr uint32_t kRun = 8;  // wire elements in 16 bytes

union WireWord {
  uint4 bits;
  uint16_t h[kRun];
};

template <class E>
__global__ void encode_kernel(const typename E::T *x, CastHeader header, uint8_t *out) {
  auto *wire = reinterpret_cast<uint4 *>(out + sizeof header);
  const size_t count = header.count, words = round_up(count, kRun) / kRun;
  const size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tid == 0) *reinterpret_cast<CastHeader *>(out) = header;
  const CastFormat format = CastFormat(header.format);
  for (size_t w = tid; w < words; w += size_t(gridDim.x) * blockDim.x) {
    const uint32_t valid = run_len(count, w * kRun, kRun);
    float v[kRun] = {};
    E::load_run(x, w * kRun, valid, v);
    WireWord word;
#pragma unroll
    for (uint32_t k = 0; k < kRun; ++k) {
      word.h[k] = k < valid ? cast_to_wire(format, cast_scaled(v[k], header.prescale)) : 0;
    }
    wire[w] = word.bits;
  }
}

template <class Sink>
__global__ void decode_kernel(const uint8_t *in, size_t count, Sink sink, uint32_t *status) {
  const CastHeader header = *reinterpret_cast<const CastHeader *>(in);
  const size_t tid = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (!cast_header_valid(header, count)) {
    if (tid == 0) report_corrupt(status);
    return;
  }
  const auto *wire = reinterpret_cast<const uint4 *>(in + sizeof header);
  const CastFormat format = CastFormat(header.format);
  const float inv = 1.0f / header.prescale;
  const size_t words = round_up(count, kRun) / kRun;
  for (size_t w = tid; w < words; w += size_t(gridDim.x) * blockDim.x) {
    WireWord word;
    word.bits = wire[w];
    float h[kRun];
#pragma unroll
    for (uint32_t k = 0; k < kRun; ++k) h[k] = cast_from_wire(format, word.h[k]);
    sink.put_scaled_run(w * kRun, h, inv, run_len(count, w * kRun, kRun));
  }
}

template <class Sink>
CodecStatus decode(const void *in, size_t in_bytes, size_t count, const void *dst, Sink sink,
                   uint32_t *status, cudaStream_t stream) {
  const CodecStatus s =
      check_decode(in, in_bytes, cast_encoded_bytes(count), count, dst, status, stream);
  if (s != CodecStatus::ok) return s;
  decode_kernel<<<grid_for(round_up(count, kRun) / kRun + 1, kThreads), kThreads, 0, stream>>>(
      static_cast<const uint8_t *>(in), count, sink, status);
  return launch_status();
}

}  // namespace

CodecStatus cast_encode(const void *src, DType t, size_t count, CastFormat format, float prescale,
                        void *out, cudaStream_t stream) {
  if (!cast_format_valid(uint8_t(format)) || !cast_prescale_valid(prescale) || out == nullptr ||
      !aligned16(out) || (count > 0 && src == nullptr)) {
    return CodecStatus::bad_argument;
  }
  const CastHeader header{kTagCast, uint8_t(format), 0, prescale, count};
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    encode_kernel<E><<<grid_for(round_up(count, kRun) / kRun + 1, kThreads), kThreads, 0, stream>>>(
        static_cast<const typename E::T *>(src), header, static_cast<uint8_t *>(out));
    return launch_status();
  });
}

CodecStatus cast_decode(const void *in, size_t in_bytes, size_t count, void *dst, DType t,
                        uint32_t *status, cudaStream_t stream) {
  return with_dtype(t, [&](auto e) {
    using E = decltype(e);
    const StoreSink<E> sink{static_cast<typename E::T *>(dst)};
    return decode(in, in_bytes, count, dst, sink, status, stream);
  });
}

CodecStatus cast_decode_accumulate(const void *in, size_t in_bytes, size_t count, float *acc,
                                   uint32_t *status, cudaStream_t stream) {
  return decode(in, in_bytes, count, acc, AccumulateSink{acc}, status, stream);
}

}  // namespace bagua::codec::gpu
