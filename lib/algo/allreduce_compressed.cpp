#include <algorithm>
#include <cstring>

#include "compressed.hpp"
#include "request_set.hpp"
#include "ring_plan.hpp"

namespace bagua {
namespace {

using codec::CodecStatus;

// Encoded segments live in fixed-size slots, 64-byte aligned.
constexpr size_t kSlotAlign = 64;

// Pipeline depth: a chunk is cut into at least kMinSegments segments, so the
// encoding, scatter, reduction and gather of different segments overlap even
// where a whole chunk is below BAGUA_SEGMENT_BYTES (many ranks, a few MiB),
// but no segment gets smaller than kMinSegmentBytes of float32 (or its
// chunk), nor its message smaller than kMinMessageBytes (per-message cost: sign's 1 bit per
// element would otherwise send 2 KiB messages), unless BAGUA_SEGMENT_BYTES
// itself is. Measured in doc/benchmarks.md, "ByteGrad's smallest message".
constexpr size_t kMinSegments = 8;
constexpr size_t kMinSegmentBytes = 64 << 10;
constexpr size_t kMinMessageBytes = 16 << 10;

// Whole codec blocks whose encoding takes at least kMinMessageBytes.
size_t elems_for_min_message(const ChunkCodec &codec) {
  constexpr size_t kProbe = 1 << 20;
  const size_t encoded = std::max<size_t>(codec.encoded_bytes(kProbe), 1);
  const size_t elems = (kMinMessageBytes * kProbe + encoded - 1) / encoded;
  const size_t block = codec.block_elems();
  return (elems + block - 1) / block * block;
}

size_t segment_elems(size_t segment_bytes, const ChunkCodec &codec, size_t count, int ranks) {
  const size_t block = codec.block_elems(), most = segment_bytes / sizeof(float);
  const size_t least =
      std::min(most, std::max(kMinSegmentBytes / sizeof(float), elems_for_min_message(codec)));
  const size_t chunk = (count + size_t(ranks) - 1) / size_t(ranks);
  // No segment beyond its chunk's whole blocks: the scratch holds 3 x n
  // slots of a segment's encoding, so a small call on many ranks would
  // otherwise keep n x 48 KiB (q8) whatever its count.
  const size_t chunk_blocks = (chunk + block - 1) / block * block;
  const size_t per = std::min(std::clamp(chunk / kMinSegments, least, most), chunk_blocks);
  return std::max(block, per / block * block);
}

// ByteGrad over n ranks. The buffer is cut into n chunks (RingPlan: sizes
// differ by at most one element), each chunk into segments. Rank r owns
// chunk r. Per segment k:
//   scatter: every rank encodes segment k of chunk d and sends it to rank d;
//   reduce:  rank r adds its own exact segment and the n-1 decoded ones in
//            float32 (rank order), divides, re-encodes the result;
//   gather:  rank r sends that encoding to everybody and every rank, r
//            included, decodes it into dst, so all outputs are identical.
// A reduce-scatter (Phases::scatter) stops after the reduce: rank r stores
// the reduced segment into its dst, which holds chunk r alone.
// All receives are posted first; scatters of later segments are encoded
// while earlier ones are in flight, and arrived segments are reduced or
// decoded between encodes, so the three phases overlap. A codec that queues
// its encodes (a device) gets segment k + 1's pieces queued before the host
// works on segment k's arrivals, and segment k's sent once they are done.
class ByteGrad {
 public:
  enum class Phases { scatter, scatter_and_gather };

  ByteGrad(AlgoContext &ctx, ChunkCodec &codec, const CompressedArgs &args, Phases phases)
      : ctx_(ctx),
        codec_(codec),
        args_(args),
        gathers_(phases == Phases::scatter_and_gather),
        t_(ctx.transport),
        n_(t_.size()),
        r_(t_.rank()),
        segment_elems_(segment_elems(ctx.segment_bytes, codec, args.count, n_)),
        plan_(args.count, n_, segment_elems_),
        kmax_(plan_.segments(0)),
        slot_bytes_(round_up(codec.encoded_bytes(segment_elems_), kSlotAlign)),
        region_bytes_(size_t(n_) * kmax_ * slot_bytes_),
        scatter_sends_(t_, n_, [&](size_t) { return kmax_; }),
        scatter_recvs_(t_, n_, [&](size_t) { return kmax_; }),
        gather_sends_(t_, n_, [&](size_t) { return kmax_; }),
        gather_recvs_(t_, n_, [&](size_t) { return kmax_; }),
        queued_(codec.queues_encodes()),
        decoded_(n_, 0) {}

  Status run() {
    // The gathered region (the third) only when there is a gather.
    ctx_.scratch.resize((gathers_ ? 3 : 2) * region_bytes_ + kSlotAlign);
    acc_ = codec_.accumulator(segment_elems_);
    BAGUA_TRY(post_receives());
    if (queued_) BAGUA_TRY(scatter_segment(0));
    for (size_t k = 0; k < kmax_; ++k) {
      if (queued_) {
        BAGUA_TRY(send_queued_segment(k));
        if (k + 1 < kmax_) BAGUA_TRY(scatter_segment(k + 1));
      } else {
        BAGUA_TRY(scatter_segment(k));
      }
      BAGUA_TRY(make_progress(false));
    }
    BAGUA_TRY(make_progress(true));
    BAGUA_TRY(check_decodes(codec_.finish_decodes()));
    for (int p = 0; p < n_; ++p) {
      BAGUA_TRY(wait_all(t_, scatter_sends_.row(p), ctx_.deadline));
      BAGUA_TRY(wait_all(t_, gather_sends_.row(p), ctx_.deadline));
    }
    return BAGUA_SUCCESS;
  }

 private:
  static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }
  int peer(int i) const { return (r_ + i) % n_; }  // i = 1 .. n-1: the others, right first
  Tag scatter_tag(size_t k) const { return ctx_.tags.at(uint32_t(2 * k)); }
  Tag gather_tag(size_t k) const { return ctx_.tags.at(uint32_t(2 * k + 1)); }
  size_t bytes(Range s) const { return codec_.encoded_bytes(s.count); }

  // Three regions of n x kmax slots: scatter sends (by destination), scatter
  // receives (by source), gathered reduced segments (by owner).
  unsigned char *slot(int region, int rank, size_t k) {
    auto base = reinterpret_cast<uintptr_t>(ctx_.scratch.data());
    const uintptr_t aligned = (base + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
    return reinterpret_cast<unsigned char *>(aligned) + region * region_bytes_ +
           (size_t(rank) * kmax_ + k) * slot_bytes_;
  }
  unsigned char *scatter_out(int dest, size_t k) { return slot(0, dest, k); }
  unsigned char *scatter_in(int src, size_t k) { return slot(1, src, k); }
  unsigned char *gathered(int owner, size_t k) { return slot(2, owner, k); }
  const void *src_at(Range s) const {
    return static_cast<const unsigned char *>(args_.src) + s.begin * dtype_size(args_.src_type);
  }
  // Where segment s's result goes: dst holds the whole buffer, or (no
  // gather) the own chunk alone.
  void *dst_at(Range s) const {
    const size_t first = gathers_ ? 0 : plan_.chunk(r_).begin;
    return static_cast<unsigned char *>(args_.dst) + (s.begin - first) * dtype_size(args_.dst_type);
  }

  Status post_receives() {
    // Contributions to the own chunk, from every other rank.
    for (size_t k = 0; k < plan_.segments(r_); ++k) {
      const Range s = plan_.segment(r_, k);
      for (int i = 1; i < n_; ++i)
        BAGUA_TRY(t_.irecv(scatter_in(peer(i), k), bytes(s), peer(i), scatter_tag(k),
                           &scatter_recvs_.row(peer(i))[k]));
    }
    // Reduced segments of every other rank's chunk.
    for (int i = 1; i < n_ && gathers_; ++i) {
      const int owner = peer(i);
      for (size_t k = 0; k < plan_.segments(owner); ++k)
        BAGUA_TRY(t_.irecv(gathered(owner, k), bytes(plan_.segment(owner, k)), owner, gather_tag(k),
                           &gather_recvs_.row(owner)[k]));
    }
    return BAGUA_SUCCESS;
  }

  // Encodes segment k of every other rank's chunk and sends each piece to
  // its owner as soon as it is encoded; a queued encode is only begun here
  // (send_queued_segment sends it).
  Status scatter_segment(size_t k) {
    for (int i = 1; i < n_; ++i) {
      const int dest = peer(i);
      if (k >= plan_.segments(dest)) continue;
      const Range s = plan_.segment(dest, k);
      const CodecStatus st =
          codec_.begin_encode(ChunkCodec::Stage::contribution, s.begin, src_at(s), args_.src_type,
                              s.count, scatter_out(dest, k));
      BAGUA_TRY(check_encode(st));
      if (!queued_) BAGUA_TRY(send_scatter_piece(dest, k));
    }
    return BAGUA_SUCCESS;
  }

  // Waits for segment k's queued encodes and sends every piece.
  Status send_queued_segment(size_t k) {
    BAGUA_TRY(check_encode(codec_.finish_encodes()));
    for (int i = 1; i < n_; ++i)
      if (k < plan_.segments(peer(i))) BAGUA_TRY(send_scatter_piece(peer(i), k));
    return BAGUA_SUCCESS;
  }

  Status send_scatter_piece(int dest, size_t k) {
    return t_.isend(scatter_out(dest, k), bytes(plan_.segment(dest, k)), dest, scatter_tag(k),
                    &scatter_sends_.row(dest)[k]);
  }

  // Reduces own segments and decodes gathered ones, in segment order. With
  // `block` false it stops at the first one whose data has not arrived.
  Status make_progress(bool block) {
    for (; reduced_ < plan_.segments(r_); ++reduced_) {
      bool all = block;
      if (!block) BAGUA_TRY(arrived_from_all(reduced_, &all));
      if (!all) break;
      BAGUA_TRY(reduce_segment(reduced_));
    }
    for (int i = 1; i < n_ && gathers_; ++i) {
      const int owner = peer(i);
      for (size_t &k = decoded_[owner]; k < plan_.segments(owner); ++k) {
        Request &req = gather_recvs_.row(owner)[k];
        bool done = !req.active;
        if (!done && !block) BAGUA_TRY(t_.test(&req, &done));
        if (!done && !block) break;
        BAGUA_TRY(wait(t_, req, ctx_.deadline));
        BAGUA_TRY(decode_gathered(owner, k));
      }
    }
    return BAGUA_SUCCESS;
  }

  // True when segment k's contributions from all other ranks are in.
  Status arrived_from_all(size_t k, bool *all) {
    *all = false;
    for (int i = 1; i < n_; ++i) {
      Request &req = scatter_recvs_.row(peer(i))[k];
      bool done = !req.active;
      if (!done) BAGUA_TRY(t_.test(&req, &done));
      if (!done) return BAGUA_SUCCESS;
    }
    *all = true;
    return BAGUA_SUCCESS;
  }

  Status reduce_segment(size_t k) {
    const Range s = plan_.segment(r_, k);
    for (int i = 1; i < n_; ++i) BAGUA_TRY(wait(t_, scatter_recvs_.row(peer(i))[k], ctx_.deadline));
    float *acc = acc_;
    BAGUA_TRY(check_reduce(codec_.load_accumulator(src_at(s), args_.src_type, s.count, acc)));
    // Add the other ranks' contributions in rank order.
    for (int p = 0; p < n_; ++p) {
      if (p == r_) continue;
      BAGUA_TRY(
          check_decode(codec_.decode_accumulate(scatter_in(p, k), bytes(s), s.count, acc), p, k));
    }
    if (args_.divisor > 1)
      BAGUA_TRY(check_reduce(codec_.divide_accumulator(acc, s.count, float(args_.divisor))));
    if (!gathers_) {
      BAGUA_TRY(check_decodes(codec_.finish_decodes()));
      return check_reduce(codec_.store_accumulator(acc, s.count, dst_at(s), args_.dst_type));
    }
    BAGUA_TRY(encode(ChunkCodec::Stage::reduced, s.begin - plan_.chunk(r_).begin, acc, DType::f32,
                     s.count, gathered(r_, k)));
    // The contributions' verdicts, before the reduced segment leaves.
    BAGUA_TRY(check_decodes(codec_.finish_decodes()));
    for (int i = 1; i < n_; ++i)
      BAGUA_TRY(t_.isend(gathered(r_, k), bytes(s), peer(i), gather_tag(k),
                         &gather_sends_.row(peer(i))[k]));
    return decode_gathered(r_, k);
  }

  Status decode_gathered(int owner, size_t k) {
    const Range s = plan_.segment(owner, k);
    return check_decode(
        codec_.decode(gathered(owner, k), bytes(s), s.count, dst_at(s), args_.dst_type), owner, k);
  }

  Status encode(ChunkCodec::Stage stage, size_t position, const void *src, DType t, size_t count,
                void *out) {
    return check_encode(codec_.encode(stage, position, src, t, count, out));
  }

  static Status check_encode(CodecStatus st) {
    if (st == CodecStatus::ok) return BAGUA_SUCCESS;
    return fail(BAGUA_ERR_INTERNAL, "compressed allreduce: encoding failed (%s)",
                codec::codec_status_name(st));
  }

  static Status check_reduce(CodecStatus st) {
    if (st == CodecStatus::ok) return BAGUA_SUCCESS;
    return fail(BAGUA_ERR_INTERNAL, "compressed allreduce: reduce step failed (%s)",
                codec::codec_status_name(st));
  }

  // The verdict of deferred decodes (ChunkCodec::finish_decodes).
  static Status check_decodes(CodecStatus st) {
    if (st == CodecStatus::ok) return BAGUA_SUCCESS;
    return fail(BAGUA_ERR_CORRUPT_DATA, "compressed allreduce: a segment failed to decode (%s)",
                codec::codec_status_name(st));
  }

  static Status check_decode(CodecStatus st, int from, size_t k) {
    if (st == CodecStatus::ok) return BAGUA_SUCCESS;
    return fail(BAGUA_ERR_CORRUPT_DATA,
                "compressed allreduce: segment %zu from rank %d failed to decode (%s)", k, from,
                codec::codec_status_name(st));
  }

  AlgoContext &ctx_;
  ChunkCodec &codec_;
  const CompressedArgs &args_;
  const bool gathers_;  // Phases::scatter_and_gather
  Transport &t_;
  const int n_, r_;
  const size_t segment_elems_;
  const RingPlan plan_;
  const size_t kmax_;
  const size_t slot_bytes_, region_bytes_;
  RequestSet scatter_sends_, scatter_recvs_, gather_sends_, gather_recvs_;
  const bool queued_;     // the codec queues its encodes
  float *acc_ = nullptr;  // the codec's accumulator, one segment
  size_t reduced_ = 0;
  std::vector<size_t> decoded_;
};

// One rank: the exact result, converted and divided.
Status allreduce_single(ChunkCodec &codec, const CompressedArgs &args) {
  float *acc = codec.accumulator(args.count);
  CodecStatus st = codec.load_accumulator(args.src, args.src_type, args.count, acc);
  if (st == CodecStatus::ok && args.divisor > 1)
    st = codec.divide_accumulator(acc, args.count, float(args.divisor));
  if (st == CodecStatus::ok) st = codec.store_accumulator(acc, args.count, args.dst, args.dst_type);
  if (st == CodecStatus::ok) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_INTERNAL, "compressed allreduce: one-rank copy failed (%s)",
              codec::codec_status_name(st));
}

}  // namespace

size_t bytegrad_bytes_sent(const ChunkCodec &codec, size_t count, int rank, int ranks,
                           size_t segment_bytes) {
  if (ranks <= 1) return 0;
  const RingPlan plan(count, ranks, segment_elems(segment_bytes, codec, count, ranks));
  const auto chunk_bytes = [&](int c) {
    size_t bytes = 0;
    for (size_t k = 0; k < plan.segments(c); ++k)
      bytes += codec.encoded_bytes(plan.segment(c, k).count);
    return bytes;
  };
  // Scatter: every other rank's chunk to its owner; gather: the own reduced
  // chunk to the n - 1 others.
  size_t sent = size_t(ranks - 1) * chunk_bytes(rank);
  for (int c = 0; c < ranks; ++c)
    if (c != rank) sent += chunk_bytes(c);
  return sent;
}

size_t bytegrad_segment_elems(const ChunkCodec &codec, size_t count, int ranks,
                              size_t segment_bytes) {
  return segment_elems(segment_bytes, codec, count, ranks);
}

size_t bytegrad_segment_rounds(const ChunkCodec &codec, size_t count, int ranks,
                               size_t segment_bytes) {
  if (ranks <= 1 || count == 0) return 0;
  return RingPlan(count, ranks, segment_elems(segment_bytes, codec, count, ranks)).segments(0);
}

Status allreduce_compressed(AlgoContext &ctx, ChunkCodec &codec, const CompressedArgs &args) {
  if (args.count == 0) return BAGUA_SUCCESS;
  if (ctx.transport.size() == 1) return allreduce_single(codec, args);
  return ByteGrad(ctx, codec, args, ByteGrad::Phases::scatter_and_gather).run();
}

Status reduce_scatter_compressed(AlgoContext &ctx, ChunkCodec &codec, const CompressedArgs &args) {
  if (args.count == 0) return BAGUA_SUCCESS;
  if (ctx.transport.size() == 1) return allreduce_single(codec, args);
  return ByteGrad(ctx, codec, args, ByteGrad::Phases::scatter).run();
}

}  // namespace bagua
