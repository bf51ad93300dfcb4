#include <cstring>

#include "allreduce.hpp"
#include "reduce.hpp"
#include "request_set.hpp"

namespace bagua {
namespace {

class RecursiveDoubling {
 public:
  RecursiveDoubling(AlgoContext &ctx, const AllreduceArgs &args)
      : ctx_(ctx),
        args_(args),
        t_(ctx.transport),
        n_(t_.size()),
        r_(t_.rank()),
        bytes_(args.count * dtype_size(args.dtype)),
        pow2_(recursive_doubling_group(n_)),
        rem_(n_ - pow2_) {}

  Status run() {
    if (args_.src != args_.dst) std::memcpy(args_.dst, args_.src, bytes_);
    ctx_.scratch.resize(bytes_);
    // Fold: among the first 2*rem ranks, each even rank hands its data to the
    // odd rank above it and sits out the exchange rounds.
    const bool folded_out = r_ < 2 * rem_ && r_ % 2 == 0;
    if (r_ < 2 * rem_) BAGUA_TRY(folded_out ? send(r_ + 1, 0) : receive_combine(r_ - 1, 0));
    const int vrank = r_ < 2 * rem_ ? r_ / 2 : r_ - rem_;
    // Exchange rounds among pow2 virtual ranks: partner differs in one bit.
    uint32_t step = 1;
    for (int mask = 1; mask < pow2_; mask <<= 1, ++step)
      if (!folded_out) BAGUA_TRY(exchange(real_rank(vrank ^ mask), step));
    if (!folded_out && args_.op == ReduceOp::avg)
      scale_divide(args_.dst, args_.count, args_.dtype, n_);
    // Unfold: the odd ranks return the result to the ranks that sat out.
    if (r_ < 2 * rem_) BAGUA_TRY(folded_out ? receive(r_ + 1, step) : send(r_ - 1, step));
    return BAGUA_SUCCESS;
  }

 private:
  int real_rank(int vrank) const { return vrank < rem_ ? 2 * vrank + 1 : vrank + rem_; }

  Status send(int peer, uint32_t step) {
    Request req;
    BAGUA_TRY(t_.isend(args_.dst, bytes_, peer, ctx_.tags.at(step), &req));
    return wait(t_, req, ctx_.deadline);
  }
  Status receive(int peer, uint32_t step) {
    Request req;
    BAGUA_TRY(t_.irecv(args_.dst, bytes_, peer, ctx_.tags.at(step), &req));
    return wait(t_, req, ctx_.deadline);
  }
  Status receive_combine(int peer, uint32_t step) {
    Request req;
    BAGUA_TRY(t_.irecv(ctx_.scratch.data(), bytes_, peer, ctx_.tags.at(step), &req));
    BAGUA_TRY(wait(t_, req, ctx_.deadline));
    combine_with(peer);
    return BAGUA_SUCCESS;
  }
  Status exchange(int peer, uint32_t step) {
    RequestSet reqs(t_, 1, [](size_t) { return 2; });
    std::vector<Request> &pair = reqs.row(0);
    BAGUA_TRY(t_.irecv(ctx_.scratch.data(), bytes_, peer, ctx_.tags.at(step), &pair[0]));
    BAGUA_TRY(t_.isend(args_.dst, bytes_, peer, ctx_.tags.at(step), &pair[1]));
    BAGUA_TRY(wait_all(t_, pair, ctx_.deadline));
    combine_with(peer);
    return BAGUA_SUCCESS;
  }
  // The lower rank's operand always comes first, so both partners compute
  // the same bits.
  void combine_with(int peer) {
    const void *mine = args_.dst, *theirs = ctx_.scratch.data();
    const void *first = peer < r_ ? theirs : mine, *second = peer < r_ ? mine : theirs;
    reduce_combine(args_.dst, first, second, args_.count, args_.dtype, args_.op);
  }

  AlgoContext &ctx_;
  const AllreduceArgs &args_;
  Transport &t_;
  const int n_, r_;
  const size_t bytes_;
  const int pow2_, rem_;
};

}  // namespace

int recursive_doubling_group(int ranks) {
  int pow2 = 1;
  while (pow2 * 2 <= ranks) pow2 *= 2;
  return pow2;
}

int recursive_doubling_steps(int ranks) {
  int steps = 0;
  for (int pow2 = recursive_doubling_group(ranks); pow2 > 1; pow2 /= 2) ++steps;
  return steps + (ranks > recursive_doubling_group(ranks) ? 2 : 0);
}

size_t recursive_doubling_bytes_sent(size_t count, DType t, int rank, int ranks) {
  // With p the largest power of two <= n and e = n - p: ranks below 2e fold
  // in pairs (the even one sends once), p ranks exchange log2 p times, and the
  // odd folding ranks send the result back.
  const int extra = ranks - recursive_doubling_group(ranks);
  const int rounds = recursive_doubling_steps(ranks) - (extra > 0 ? 2 : 0);
  const int messages = rank >= 2 * extra ? rounds : rank % 2 == 0 ? 1 : rounds + 1;
  return size_t(messages) * count * dtype_size(t);
}

Status allreduce_recursive_doubling(AlgoContext &ctx, const AllreduceArgs &args) {
  return RecursiveDoubling(ctx, args).run();
}

}  // namespace bagua
