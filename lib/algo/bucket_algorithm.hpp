// The per-bucket algorithm hook of the bucketed communicator: one call of a
// collective on a bucket's contiguous buffer, in place. Every algorithm
// family plugs in here by implementing BucketAlgorithm and adding a kind to
// make_bucket_algorithm; the bucket engine only knows this interface.
#pragma once

#include <chrono>
#include <memory>

#include "allreduce.hpp"

namespace bagua {

// Receives the phases an algorithm can tell apart (encode, decode); the
// rest of its run is transfer. Called from the thread running the bucket.
class PhaseSink {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~PhaseSink() = default;
  virtual void phase(const char *name, Clock::time_point begin, Clock::time_point end) = 0;
};

// A bucket's elements: one contiguous buffer of one type.
struct BucketBuffer {
  void *data;
  size_t count;
  DType dtype;
};

class BucketAlgorithm {
 public:
  virtual ~BucketAlgorithm() = default;
  // The name shown in the timeline.
  virtual const char *name() const = 0;
  // Runs call `round` (0, 1, ... per bucket) on buf, in place, on every rank
  // of ctx. `sink` may be NULL.
  virtual Status run(AlgoContext &ctx, const BucketBuffer &buf, uint64_t round,
                     PhaseSink *sink) = 0;
};

enum class BucketAlgorithmKind { allreduce, allreduce_q8, allreduce_fp16 };

struct BucketAlgorithmSpec {
  BucketAlgorithmKind kind;
  ReduceOp op;
  bool ring;             // exact allreduce: ring (else recursive doubling)
  uint32_t codec_block;  // q8: elements per block
  int ranks;             // size of the communicator (divisor of an average)
};

// Checks that `spec` supports buffers of type t (message names the rule).
Status check_bucket_algorithm(const BucketAlgorithmSpec &spec, DType t);

std::unique_ptr<BucketAlgorithm> make_bucket_algorithm(const BucketAlgorithmSpec &spec);

}  // namespace bagua
