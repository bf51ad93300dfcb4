#include "partial_average.hpp"

#include <cstdint>

#include "half.h"

namespace bagua {
namespace {

// dst[i] = src[i] * w, computed in float32 (float64 for double).
template <class S, class C, C (*Load)(S), S (*Store)(C)>
void scale(void *dst, const void *src, size_t n, double w) {
  const S *in = static_cast<const S *>(src);
  S *out = static_cast<S *>(dst);
  const C cw = static_cast<C>(w);
  for (size_t i = 0; i < n; ++i) out[i] = Store(Load(in[i]) * cw);
}

template <class T>
T same(T v) {
  return v;
}

void scale_into(void *dst, const void *src, size_t n, DType t, double w) {
  switch (t) {
    case DType::f32: return scale<float, float, same<float>, same<float>>(dst, src, n, w);
    case DType::f64: return scale<double, double, same<double>, same<double>>(dst, src, n, w);
    case DType::f16: return scale<uint16_t, float, fp16_to_float, float_to_fp16>(dst, src, n, w);
    case DType::bf16: return scale<uint16_t, float, bf16_to_float, float_to_bf16>(dst, src, n, w);
  }
}

}  // namespace

Status group_average(AlgoContext &ctx, const GroupAverageArgs &args) {
  AllreduceArgs reduce{args.src, args.dst, args.count, args.dtype, ReduceOp::avg};
  if (args.weight >= 0) {
    scale_into(args.dst, args.src, args.count, args.dtype, args.weight);
    reduce = {args.dst, args.dst, args.count, args.dtype, ReduceOp::sum};
  }
  return args.use_ring ? allreduce_ring(ctx, reduce) : allreduce_recursive_doubling(ctx, reduce);
}

Status group_average_compressed(AlgoContext &ctx, ChunkCodec &codec, const void *src, void *dst,
                                size_t count, DType dtype) {
  const CompressedArgs args{src, dtype, dst, dtype, count, ctx.transport.size()};
  return allreduce_compressed(ctx, codec, args);
}

}  // namespace bagua
