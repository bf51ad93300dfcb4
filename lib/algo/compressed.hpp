// Compressed allreduce (ByteGrad) and the node-level steps of hierarchical
// mode, written against the Transport interface. The schedule is written
// once; a ChunkCodec adapter says how a segment is encoded and decoded, so
// every wire of the registry shares it.
#pragma once

#include <memory>
#include <vector>

#include "../base/wires.hpp"
#include "allreduce.hpp"
#include "codec.h"

namespace bagua {

// How the ByteGrad schedule sees a codec. Encoded segments are untrusted
// when decoded: decoders check headers and lengths (CodecStatus).
class ChunkCodec {
 public:
  // The two quantizations of ByteGrad: each rank's contribution, and the
  // reduced chunk its owner re-encodes for the allgather.
  enum class Stage { contribution, reduced };

  virtual ~ChunkCodec() = default;
  virtual size_t encoded_bytes(size_t count) const = 0;
  // Segments are cut at multiples of this many elements.
  virtual size_t block_elems() const = 0;
  // Encodes count elements of type t. `position` locates src[0] for codecs
  // with error feedback: the index in the user's buffer for contributions,
  // the index inside the owner's chunk for reduced chunks.
  virtual codec::CodecStatus encode(Stage stage, size_t position, const void *src, DType t,
                                    size_t count, void *out) = 0;
  // Queued encodes (device codecs): begin_encode may return before `out`
  // holds the bytes, which it does once finish_encodes() returned, so the
  // encodes of a segment's pieces run back to back and overlap the host's
  // work on earlier segments. Codecs that do not queue encode at once.
  virtual bool queues_encodes() const { return false; }
  virtual codec::CodecStatus begin_encode(Stage stage, size_t position, const void *src, DType t,
                                          size_t count, void *out) {
    return encode(stage, position, src, t, count, out);
  }
  virtual codec::CodecStatus finish_encodes() { return codec::CodecStatus::ok; }
  // Decodes into dst (type t) or adds into acc. A codec whose decoders
  // defer their verdict (a device: the headers are checked on it) may return
  // ok before it is known; finish_decodes() waits for every decode since the
  // last call and returns the first failure among them.
  virtual codec::CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst,
                                    DType t) = 0;
  virtual codec::CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count,
                                               float *acc) = 0;
  virtual codec::CodecStatus finish_decodes() { return codec::CodecStatus::ok; }

  // The float32 reduce step, in the memory the codec works on (host here;
  // device for the GPU adapters): a buffer of at least count floats owned by
  // the codec, acc = src as float32, acc /= divisor, dst = acc as type t.
  virtual float *accumulator(size_t count);
  virtual codec::CodecStatus load_accumulator(const void *src, DType t, size_t count, float *acc);
  virtual codec::CodecStatus divide_accumulator(float *acc, size_t count, float divisor);
  virtual codec::CodecStatus store_accumulator(const float *acc, size_t count, void *dst, DType t);

 private:
  SendVector<float> host_accumulator_;
};

// What a codec adapter takes besides its wire; the indices of prescale and
// residual are ChunkCodec::Stage's (contribution, reduced chunk).
struct CodecSetup {
  uint32_t block = 1;          // elements per block (the wire's BlockRule)
  float prescale[2] = {1, 1};  // multiplies the input before encoding (fp16: 1/ranks)
  // Error feedback: float32 residuals owned by the caller, `contribution`
  // indexed like the user's buffer, `reduced` like the owner's chunk; both
  // outlive the codec.
  float *residual[2] = {nullptr, nullptr};
};

// The host codec of `wire` (its kernels in the registry); nullptr for exact.
std::unique_ptr<ChunkCodec> make_host_codec(const WireInfo &wire, const CodecSetup &setup);

// One compressed allreduce: every rank's src (src_type) summed, divided by
// `divisor` (1 for a sum), written to dst (dst_type) bit-identically on every
// rank. src may equal dst (in-place). With one rank the result is exact.
struct CompressedArgs {
  const void *src;
  DType src_type;
  void *dst;
  DType dst_type;
  size_t count;
  int divisor;
};

// ByteGrad: all-to-all of encoded chunks, float32 reduction of the own chunk
// by its owner, re-encode, allgather, decode; pipelined per segment
// (ctx.segment_bytes / 4 elements, fewer where a chunk would have under 8
// segments, but at least 16384 unless ctx.segment_bytes is smaller; rounded
// to codec blocks).
Status allreduce_compressed(AlgoContext &ctx, ChunkCodec &codec, const CompressedArgs &args);

// ByteGrad's scatter and reduce alone: rank r's dst (chunk r of the
// RingPlan's n chunks, count / n elements when n divides count) receives
// that chunk of every rank's src summed in float32 (its own exactly, the
// others' decoded) and divided by `divisor`. src and dst must not overlap.
Status reduce_scatter_compressed(AlgoContext &ctx, ChunkCodec &codec, const CompressedArgs &args);

// Bytes `rank` of `ranks` sends in one allreduce_compressed of `count`
// elements with segments of `segment_bytes`.
size_t bytegrad_bytes_sent(const ChunkCodec &codec, size_t count, int rank, int ranks,
                           size_t segment_bytes);

// Elements of a full segment in that allreduce_compressed (the chunk's last
// segment may be shorter).
size_t bytegrad_segment_elems(const ChunkCodec &codec, size_t count, int ranks,
                              size_t segment_bytes);

// Segments of the largest chunk in that allreduce_compressed: each phase
// (scatter, gather) exchanges this many rounds of messages among all ranks.
size_t bytegrad_segment_rounds(const ChunkCodec &codec, size_t count, int ranks,
                               size_t segment_bytes);

// Hierarchical mode, inside one node (ctx's ranks; rank 0 is the leader):
// the exact float32 sum of every member's src, in rank order, into `sum`
// (count floats, leader only; ignored elsewhere).
Status node_reduce_to_leader(AlgoContext &ctx, const void *src, DType t, size_t count, float *sum);
// Copies buf (count elements of t) from the leader to every member.
Status node_broadcast_from_leader(AlgoContext &ctx, void *buf, DType t, size_t count);

// Conversions between element buffers and float32.
void load_as_float(const void *src, DType t, size_t count, float *out);
void store_from_float(const float *in, size_t count, void *dst, DType t);
void add_as_float(const void *src, DType t, size_t count, float *acc);

}  // namespace bagua
