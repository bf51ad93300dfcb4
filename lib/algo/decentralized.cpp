#include "decentralized.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "codec.h"
#include "compressed.hpp"
#include "request_set.hpp"
#include "ring_plan.hpp"

namespace bagua {
namespace {

// out[i] = (in[0][i] + ... + in[K-1][i]) / K, summed in this order; K fixed
// at compile time so the loop vectorizes.
template <class E, size_t K>
void average_fixed(typename E::T *out, const std::vector<const void *> &inputs, size_t begin,
                   size_t count) {
  using S = typename E::T;
  using C = typename E::Compute;
  const S *in[K];
  for (size_t k = 0; k < K; ++k) in[k] = static_cast<const S *>(inputs[k]) + begin;
  for (size_t i = 0; i < count; ++i) {
    C sum = E::load(in[0][i]);
    for (size_t k = 1; k < K; ++k) sum += E::load(in[k][i]);
    out[i] = E::store(sum / static_cast<C>(K));
  }
}

// dst[i] = average of inputs[*][i] for i in [begin, begin + count): two
// (shift_one) or three (ring) inputs.
void average_into(void *dst, const std::vector<const void *> &inputs, size_t begin, size_t count,
                  DType t) {
  elem::visit(t, [&]<class E>(E) {
    auto *out = static_cast<typename E::T *>(dst) + begin;
    if (inputs.size() == 2)
      average_fixed<E, 2>(out, inputs, begin, count);
    else
      average_fixed<E, 3>(out, inputs, begin, count);
  });
}

unsigned char *byte_at(const void *base, size_t offset) {
  return static_cast<unsigned char *>(const_cast<void *>(base)) + offset;
}

// Exchange of whole buffers with peers, one message per pipeline segment, so
// that the averaging of segment k overlaps the transfer of later segments.
class PeerAverage {
 public:
  PeerAverage(AlgoContext &ctx, const void *src, void *dst, size_t count, DType t,
              const std::vector<int> &peers)
      : ctx_(ctx),
        t_(ctx.transport),
        src_(src),
        dst_(dst),
        count_(count),
        type_(t),
        esize_(dtype_size(t)),
        peers_(peers),
        segments_(count, ctx.segment_bytes / esize_),
        recvs_(t_, peers.size(), [&](size_t) { return segments_.number(); }),
        sends_(t_, peers.size(), [&](size_t) { return segments_.number(); }) {}

  Status run() {
    ctx_.scratch.resize(peers_.size() * count_ * esize_);
    BAGUA_TRY(post_all());
    const std::vector<const void *> inputs = inputs_in_rank_order();
    // Average each segment as soon as every peer's copy of it has arrived.
    for (size_t k = 0; k < segments_.number(); ++k) {
      for (size_t p = 0; p < peers_.size(); ++p) {
        BAGUA_TRY(wait(t_, recvs_.row(p)[k], ctx_.deadline));
        // In place, segment k of dst is still being sent until this completes.
        if (src_ == dst_) BAGUA_TRY(wait(t_, sends_.row(p)[k], ctx_.deadline));
      }
      const Range s = segments_.at(k);
      average_into(dst_, inputs, s.begin, s.count, type_);
    }
    for (size_t p = 0; p < peers_.size(); ++p)
      BAGUA_TRY(wait_all(t_, sends_.row(p), ctx_.deadline));
    return BAGUA_SUCCESS;
  }

 private:
  unsigned char *received(size_t p) const { return ctx_.scratch.data() + p * count_ * esize_; }

  Status post_all() {
    for (size_t p = 0; p < peers_.size(); ++p) {
      for (size_t k = 0; k < segments_.number(); ++k) {
        const size_t offset = segments_.at(k).begin * esize_;
        const size_t bytes = segments_.at(k).count * esize_;
        BAGUA_TRY(t_.irecv(received(p) + offset, bytes, peers_[p], ctx_.tags.at(uint32_t(k)),
                           &recvs_.row(p)[k]));
        BAGUA_TRY(t_.isend(byte_at(src_, offset), bytes, peers_[p], ctx_.tags.at(uint32_t(k)),
                           &sends_.row(p)[k]));
      }
    }
    return BAGUA_SUCCESS;
  }

  // This rank's input and the peers' received copies, by ascending rank.
  std::vector<const void *> inputs_in_rank_order() const {
    std::vector<std::pair<int, const void *>> by_rank{{t_.rank(), src_}};
    for (size_t p = 0; p < peers_.size(); ++p) by_rank.emplace_back(peers_[p], received(p));
    std::sort(by_rank.begin(), by_rank.end());
    std::vector<const void *> inputs;
    for (auto &entry : by_rank) inputs.push_back(entry.second);
    return inputs;
  }

  AlgoContext &ctx_;
  Transport &t_;
  const void *src_;
  void *dst_;
  const size_t count_;
  const DType type_;
  const size_t esize_;
  const std::vector<int> &peers_;
  const Segments segments_;
  RequestSet recvs_, sends_;
};

// Sends `bytes` of `src` to every neighbour and receives theirs into
// `into[i]` (one message each way per distinct neighbour).
Status exchange_with(AlgoContext &ctx, const std::vector<int> &neighbours, const void *src,
                     size_t bytes, const std::vector<void *> &into) {
  Transport &t = ctx.transport;
  RequestSet reqs(t, 2, [&](size_t) { return neighbours.size(); });
  for (size_t i = 0; i < neighbours.size(); ++i) {
    BAGUA_TRY(t.irecv(into[i], bytes, neighbours[i], ctx.tags.at(0), &reqs.row(0)[i]));
    BAGUA_TRY(t.isend(src, bytes, neighbours[i], ctx.tags.at(0), &reqs.row(1)[i]));
  }
  BAGUA_TRY(wait_all(t, reqs.row(0), ctx.deadline));
  return wait_all(t, reqs.row(1), ctx.deadline);
}

Status codec_error(codec::CodecStatus s, const char *what) {
  return fail(BAGUA_ERR_CORRUPT_DATA, "low-precision step: %s failed to decode (%s)", what,
              codec::codec_status_name(s));
}

}  // namespace

int shift_one_peer(int rank, int n, int round) {
  if (n == 1) return rank;
  if (n % 2 == 1) return ring_mod(round % n - rank, n);
  const int half = n / 2, shift = round % half;
  return rank < half ? half + (rank + shift) % half : ring_mod(rank - half - shift, half);
}

std::vector<int> ring_neighbours(int rank, int n) {
  std::vector<int> out;
  for (int peer : {ring_mod(rank - 1, n), ring_mod(rank + 1, n)})
    if (peer != rank && std::find(out.begin(), out.end(), peer) == out.end()) out.push_back(peer);
  return out;
}

std::vector<int> peers_of(PeerMode mode, int rank, int n, int round) {
  if (mode == PeerMode::ring) return ring_neighbours(rank, n);
  const int peer = shift_one_peer(rank, n, round);
  return peer == rank ? std::vector<int>{} : std::vector<int>{peer};
}

Status average_with_peers(AlgoContext &ctx, const void *src, void *dst, size_t count, DType t,
                          const std::vector<int> &peers) {
  if (peers.empty() || count == 0) {
    if (src != dst) std::memcpy(dst, src, count * dtype_size(t));
    return BAGUA_SUCCESS;
  }
  return PeerAverage(ctx, src, dst, count, t, peers).run();
}

void apply_average_delta(void *w, const void *reduced, const void *temp, size_t count, DType t) {
  elem::visit(t, [&]<class E>(E) {
    for (size_t i = 0; i < count; ++i)
      elem::store_at<E>(
          w, i,
          elem::load_at<E>(w, i) + (elem::load_at<E>(reduced, i) - elem::load_at<E>(temp, i)));
  });
}

Status lowprec_init(AlgoContext &ctx, const void *x, size_t count, DType t,
                    const LowprecCodec &codec, LowprecReplicas *r) {
  const int n = ctx.transport.size(), rank = ctx.transport.rank();
  r->self.resize(count);
  r->left.resize(count);
  r->right.resize(count);
  const size_t encoded = codec.kernels.encoded_bytes(count, codec.params.block);
  r->encoded_self.resize(encoded);
  r->encoded_left.resize(encoded);
  r->encoded_right.resize(encoded);
  load_as_float(x, t, count, r->self.data());
  const int left = ring_mod(rank - 1, n), right = ring_mod(rank + 1, n);
  const std::vector<int> neighbours = ring_neighbours(rank, n);
  std::vector<void *> into{r->left.data(), r->right.data()};
  BAGUA_TRY(exchange_with(ctx, neighbours, r->self.data(), count * sizeof(float), into));
  // With fewer than two distinct neighbours the missing copies are the same rank.
  if (left == rank) r->left = r->self;
  if (right == rank)
    r->right = r->self;
  else if (right == left)
    r->right = r->left;
  return BAGUA_SUCCESS;
}

Status lowprec_step(AlgoContext &ctx, void *x, size_t count, DType t, const LowprecCodec &codec,
                    LowprecReplicas *r) {
  const int n = ctx.transport.size(), rank = ctx.transport.rank();
  if (n == 1) return BAGUA_SUCCESS;
  const std::vector<int> neighbours = ring_neighbours(rank, n);
  const bool two_neighbours = neighbours.size() == 2;
  // 1. diff = (x - w) + sum over neighbours (N - w) / (neighbours + 1).
  ctx.scratch.resize(count * sizeof(float));
  float *diff = reinterpret_cast<float *>(ctx.scratch.data());
  load_as_float(x, t, count, diff);
  const float share = 1.0f / float(neighbours.size() + 1);
  for (size_t i = 0; i < count; ++i) {
    const float w = r->self[i];
    const float mixing = two_neighbours ? (r->left[i] - w) + (r->right[i] - w) : r->left[i] - w;
    diff[i] = (diff[i] - w) + mixing * share;
  }
  // 2. Q = encode(diff), sent to both neighbours; Q_L, Q_R received.
  if (codec.kernels.encode(codec.params, diff, DType::f32, count, r->encoded_self.data()) !=
      codec::CodecStatus::ok)
    return fail(BAGUA_ERR_INTERNAL, "low-precision step: the %s encoder refused its input",
                codec.kernels.wire);
  const size_t bytes = r->encoded_self.size();
  std::vector<void *> into{r->encoded_left.data(), r->encoded_right.data()};
  BAGUA_TRY(exchange_with(ctx, neighbours, r->encoded_self.data(), bytes, into));
  // 3. L += decode(Q_L), R += decode(Q_R) (with one neighbour, both copy it).
  const unsigned char *from_right =
      two_neighbours ? r->encoded_right.data() : r->encoded_left.data();
  const auto accumulate = [&](const void *in, float *acc) {
    return codec.kernels.decode_accumulate(codec.params, in, bytes, count, acc);
  };
  codec::CodecStatus s = accumulate(r->encoded_left.data(), r->left.data());
  if (s != codec::CodecStatus::ok) return codec_error(s, "the left neighbour's message");
  s = accumulate(from_right, r->right.data());
  if (s != codec::CodecStatus::ok) return codec_error(s, "the right neighbour's message");
  // 4. w += decode(Q) (the same bytes and arithmetic as the neighbours'); x = w.
  s = accumulate(r->encoded_self.data(), r->self.data());
  if (s != codec::CodecStatus::ok) return codec_error(s, "this rank's own message");
  store_from_float(r->self.data(), count, x, t);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
