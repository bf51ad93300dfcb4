#include "partial_average.hpp"

#include "reduce.hpp"

namespace bagua {

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
