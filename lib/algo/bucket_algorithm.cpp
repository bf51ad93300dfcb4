#include "bucket_algorithm.hpp"

#include "compressed.hpp"

namespace bagua {
namespace {

class ExactAllreduce final : public BucketAlgorithm {
 public:
  ExactAllreduce(ReduceOp op, bool ring) : op_(op), ring_(ring) {}
  const char *name() const override { return "allreduce"; }
  Status run(AlgoContext &ctx, const BucketBuffer &buf, uint64_t, PhaseSink *) override {
    const AllreduceArgs args{buf.data, buf.data, buf.count, buf.dtype, op_};
    return ring_ ? allreduce_ring(ctx, args) : allreduce_recursive_doubling(ctx, args);
  }

 private:
  ReduceOp op_;
  bool ring_;
};

// Forwards to a codec and reports the time of each encode and decode.
class TimedCodec final : public ChunkCodec {
 public:
  TimedCodec(ChunkCodec &inner, PhaseSink *sink) : inner_(inner), sink_(sink) {}
  size_t encoded_bytes(size_t count) const override { return inner_.encoded_bytes(count); }
  size_t block_elems() const override { return inner_.block_elems(); }
  codec::CodecStatus encode(Stage stage, size_t position, const void *src, DType t, size_t count,
                            void *out) override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.encode(stage, position, src, t, count, out);
    report("encode", begin);
    return s;
  }
  codec::CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst,
                            DType t) const override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.decode(in, bytes, count, dst, t);
    report("decode", begin);
    return s;
  }
  codec::CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count,
                                       float *acc) const override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.decode_accumulate(in, bytes, count, acc);
    report("decode", begin);
    return s;
  }

 private:
  void report(const char *phase, PhaseSink::Clock::time_point begin) const {
    if (sink_ != nullptr) sink_->phase(phase, begin, PhaseSink::Clock::now());
  }
  ChunkCodec &inner_;
  PhaseSink *sink_;
};

// ByteGrad with a codec (q8 or fp16 cast), see compressed.hpp.
class CompressedAllreduce final : public BucketAlgorithm {
 public:
  CompressedAllreduce(const char *name, std::unique_ptr<ChunkCodec> codec, int divisor)
      : name_(name), codec_(std::move(codec)), divisor_(divisor) {}
  const char *name() const override { return name_; }
  Status run(AlgoContext &ctx, const BucketBuffer &buf, uint64_t, PhaseSink *sink) override {
    TimedCodec timed(*codec_, sink);
    const CompressedArgs args{buf.data, buf.dtype, buf.data, buf.dtype, buf.count, divisor_};
    return allreduce_compressed(ctx, timed, args);
  }

 private:
  const char *name_;
  std::unique_ptr<ChunkCodec> codec_;
  int divisor_;
};

}  // namespace

Status check_bucket_algorithm(const BucketAlgorithmSpec &spec, DType t) {
  if (spec.kind == BucketAlgorithmKind::allreduce) return BAGUA_SUCCESS;
  if (t == DType::f64)
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "compressed bucket algorithms need MPI_FLOAT, BAGUA_FLOAT16 or BAGUA_BFLOAT16 "
                "tensors (the bucket holds %s)",
                dtype_name(t));
  if (spec.op != ReduceOp::sum && spec.op != ReduceOp::avg)
    return fail(BAGUA_ERR_UNSUPPORTED_OP,
                "compressed bucket algorithms need MPI_SUM or BAGUA_AVG (got %s)",
                op_name(spec.op));
  return BAGUA_SUCCESS;
}

std::unique_ptr<BucketAlgorithm> make_bucket_algorithm(const BucketAlgorithmSpec &spec) {
  const int divisor = spec.op == ReduceOp::avg ? spec.ranks : 1;
  switch (spec.kind) {
    case BucketAlgorithmKind::allreduce:
      return std::make_unique<ExactAllreduce>(spec.op, spec.ring);
    case BucketAlgorithmKind::allreduce_q8:
      return std::make_unique<CompressedAllreduce>("allreduce_q8", make_q8_codec(spec.codec_block),
                                                   divisor);
    case BucketAlgorithmKind::allreduce_fp16: {
      // As bagua_allreduce_fp16: scale by 1/n so a sum of n float16 values
      // stays in range; an average already is.
      const float inv = 1.0f / float(spec.ranks);
      const bool average = spec.op == ReduceOp::avg;
      return std::make_unique<CompressedAllreduce>(
          "allreduce_fp16", make_cast_codec(codec::CastFormat::fp16, inv, average ? 1.0f : inv),
          divisor);
    }
  }
  return nullptr;
}

}  // namespace bagua
