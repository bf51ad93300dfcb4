// The codecs of the compressed allreduce as the tests build them, the
// tests' inputs, and the documented error bounds; shared by the tests of the
// compressed allreduce and of the compressed group average.
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "../wire_ids.hpp"
#include "algo/compressed.hpp"
#include "core/run.hpp"

namespace inproc {

enum class Codec { q8, fp16, bf16, sign, q4, mxfp8 };

// Error-feedback state of the sign codec, indexed like the buffer.
struct SignResiduals {
  bagua::SignFeedback feedback;
  explicit SignResiduals(size_t count) : feedback(MPI_COMM_NULL, count) {}
};

// q8, q4 and sign blocks: small, so 4099 elements span many blocks.
constexpr uint32_t kBlock = 64;

// The codec the library's run path builds for a call among n ranks
// (core/run.hpp: the same adapter, prescales and block size selection).
inline std::unique_ptr<bagua::ChunkCodec> make_codec(Codec codec, int n, bool average,
                                                     SignResiduals &sr) {
  const bagua::Wire wires[] = {bagua::wire::q8,   bagua::wire::fp16, bagua::wire::bf16,
                               bagua::wire::sign, bagua::wire::q4,   bagua::wire::mxfp8};
  bagua::Call call{};
  call.wire = wires[int(codec)];
  call.op = average ? bagua::ReduceOp::avg : bagua::ReduceOp::sum;
  call.feedback = &sr.feedback;
  bagua::Options options;
  options.compressed.set_setting_blocks(kBlock);
  return bagua::make_call_codec(call, n, options);
}

// Values in [-1, 1] that differ per rank: a triangle wave (cheaper than a
// sine at 1<<20 elements x 16 ranks).
inline double smooth(int rank, size_t i) {
  const double x = 0.0137 * double(i) + 0.3 * rank;
  return 4 * std::fabs(x - std::floor(x) - 0.5) - 1;
}

// The documented bounds (doc/compressed.md) of an n-rank result `value` for
// inputs in [-1, 1]. q8 and q4: the n - 1 other contributions (block range
// <= 2) and the reduced sum (range <= 2n) are quantized once each, error <=
// range / 510 (q8) or range / 30 (q4). Cast: each scaled value is rounded at most twice (relative
// 2^-11 for fp16, 2^-8 for bf16; fp16 subnormals add 2^-25 absolute). Divided by n for an average,
// plus the rounding of the output type. mxfp8: each of those n - 1
// contributions and the reduced sum is rounded once to 1/16 of itself, or
// to E4M3's subnormal step (2^-10 of the block's scale, <= 1/224 of its
// largest magnitude); `magnitude` is the sum of the ranks' |inputs| (n at
// most).
inline double bound(Codec codec, bagua::DType t, bool average, int n, double value,
                    double magnitude = -1) {
  const double eps = codec == Codec::fp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double ranges = 2.0 * (n - 1) + 2.0 * n;
  const double sum_of_abs = magnitude < 0 ? n : magnitude;
  const double mx_steps = (2.0 * n) * 2.0 * n / (224.0 * 1024.0);
  double b = codec == Codec::q8      ? ranges / 510.0
             : codec == Codec::q4    ? ranges / 30.0
             : codec == Codec::mxfp8 ? 2.1 * sum_of_abs / 16.0 + mx_steps
                                     : 2.0 * n * (eps + n * std::ldexp(1.0, -25));
  if (average) b /= n;
  const double out_ulp = t == bagua::DType::f16    ? std::ldexp(1.0, -11)
                         : t == bagua::DType::bf16 ? std::ldexp(1.0, -8)
                                                   : 1e-7;
  return b * 1.001 + std::fabs(value) * out_ulp + 1e-6;
}

}  // namespace inproc
