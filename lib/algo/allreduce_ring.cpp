#include <cstring>

#include "allreduce.hpp"
#include "reduce.hpp"
#include "request_set.hpp"
#include "ring_plan.hpp"

namespace bagua {
namespace {

// The ring runs 2(n-1) steps. At step g every rank sends chunk (r - g) to its
// right neighbour and receives chunk (r - g - 1) from its left one; steps
// 0..n-2 reduce the received chunk (reduce-scatter), the rest store it
// (allgather). The chunk received at step g is the one sent at step g + 1,
// so each segment is forwarded the moment it is ready (segment pipelining).
// A reduce-scatter runs the first n - 1 steps only, with the chunks shifted by
// one so that rank r ends holding the reduced chunk r.
class Ring {
 public:
  Ring(AlgoContext &ctx, const AllreduceArgs &args, bool reduce_scatter)
      : ctx_(ctx),
        args_(args),
        t_(ctx.transport),
        n_(t_.size()),
        r_(t_.rank()),
        esize_(dtype_size(args.dtype)),
        plan_(args.count, n_, ctx.segment_bytes / esize_),
        shift_(reduce_scatter ? 1 : 0),
        steps_(reduce_scatter ? n_ - 1 : 2 * (n_ - 1)),
        recvs_(t_, steps_, [&](size_t g) { return plan_.segments(recv_chunk(int(g))); }),
        sends_(t_, steps_, [&](size_t g) { return plan_.segments(send_chunk(int(g))); }) {}

  Status run() {
    ctx_.scratch.resize(2 * plan_.max_chunk() * esize_);
    BAGUA_TRY(send_segments_from(0, args_.src));
    BAGUA_TRY(post_recvs(0));
    for (int g = 0; g < steps_; ++g) {
      if (g + 1 < steps_) BAGUA_TRY(prepare_step(g + 1));
      BAGUA_TRY(complete_step(g));
    }
    for (int g = 0; g < steps_; ++g) BAGUA_TRY(wait_all(t_, sends_.row(g), ctx_.deadline));
    return BAGUA_SUCCESS;
  }

 private:
  int send_chunk(int g) const { return ring_mod(r_ - g - shift_, n_); }
  int recv_chunk(int g) const { return ring_mod(r_ - g - 1 - shift_, n_); }
  bool reducing(int g) const { return g < n_ - 1; }
  unsigned char *at(const void *base, Range s) const {
    return static_cast<unsigned char *>(const_cast<void *>(base)) + s.begin * esize_;
  }
  // Reduce-scatter receives land in one of two scratch slots (steps alternate).
  unsigned char *slot(int g, Range s) const {
    const Range chunk = plan_.chunk(recv_chunk(g));
    return ctx_.scratch.data() + ((g % 2) * plan_.max_chunk() + s.begin - chunk.begin) * esize_;
  }

  Status send_segments_from(int g, const void *base) {
    const int c = send_chunk(g);
    for (size_t k = 0; k < plan_.segments(c); ++k) BAGUA_TRY(send_segment(g, k, base));
    return BAGUA_SUCCESS;
  }
  Status send_segment(int g, size_t k, const void *base) {
    const Range s = plan_.segment(send_chunk(g), k);
    return t_.isend(at(base, s), s.count * esize_, ring_mod(r_ + 1, n_), ctx_.tags.at(g),
                    &sends_.row(g)[k]);
  }

  // Before posting allgather receives into a chunk of dst, the earlier sends
  // that read that chunk must be complete (step g + 1 - n sent it).
  Status prepare_step(int g) {
    if (!reducing(g)) BAGUA_TRY(wait_all(t_, sends_.row(g + 1 - n_), ctx_.deadline));
    return post_recvs(g);
  }

  Status post_recvs(int g) {
    const int c = recv_chunk(g);
    for (size_t k = 0; k < plan_.segments(c); ++k) {
      const Range s = plan_.segment(c, k);
      void *into = reducing(g) ? slot(g, s) : at(args_.dst, s);
      BAGUA_TRY(t_.irecv(into, s.count * esize_, ring_mod(r_ - 1, n_), ctx_.tags.at(g),
                         &recvs_.row(g)[k]));
    }
    return BAGUA_SUCCESS;
  }

  // Waits for each segment of step g in order, reduces it (reduce-scatter
  // steps) and forwards it as step g + 1.
  Status complete_step(int g) {
    const int c = recv_chunk(g);
    for (size_t k = 0; k < plan_.segments(c); ++k) {
      BAGUA_TRY(wait(t_, recvs_.row(g)[k], ctx_.deadline));
      const Range s = plan_.segment(c, k);
      if (reducing(g)) {
        reduce_combine(at(args_.dst, s), at(args_.src, s), slot(g, s), s.count, args_.dtype,
                       args_.op);
        if (g == n_ - 2 && args_.op == ReduceOp::avg)
          scale_divide(at(args_.dst, s), s.count, args_.dtype, n_);
      }
      if (g + 1 < steps_) BAGUA_TRY(send_segment(g + 1, k, args_.dst));
    }
    return BAGUA_SUCCESS;
  }

  AlgoContext &ctx_;
  const AllreduceArgs &args_;
  Transport &t_;
  const int n_, r_;
  const size_t esize_;
  const RingPlan plan_;
  const int shift_, steps_;
  RequestSet recvs_, sends_;
};

// One rank, or nothing to reduce: the input is the result.
Status run_ring(AlgoContext &ctx, const AllreduceArgs &args, bool reduce_scatter) {
  if (ctx.transport.size() == 1 || args.count == 0) {
    if (args.src != args.dst) std::memcpy(args.dst, args.src, args.count * dtype_size(args.dtype));
    return BAGUA_SUCCESS;
  }
  return Ring(ctx, args, reduce_scatter).run();
}

}  // namespace

size_t ring_bytes_sent(size_t count, DType t, int rank, int ranks) {
  // Step g sends chunk (rank - g), for g = 0 .. 2(n-1) - 1.
  const RingPlan plan(count, ranks, 1);
  size_t chunks = 0;
  for (int g = 0; g < 2 * (ranks - 1); ++g) chunks += plan.chunk(ring_mod(rank - g, ranks)).count;
  return chunks * dtype_size(t);
}

Status allreduce_ring(AlgoContext &ctx, const AllreduceArgs &args) {
  return run_ring(ctx, args, false);
}

Status reduce_scatter_ring(AlgoContext &ctx, const AllreduceArgs &args) {
  return run_ring(ctx, args, true);
}

}  // namespace bagua
