// Decentralized averaging: each rank averages its weights with a few peers
// (doc/decentralized.md, "Full precision") or, in low precision, exchanges q8-compressed
// model differences with its ring neighbours ("Low precision").
#pragma once

#include <vector>

#include "allreduce.hpp"
#include "codec.h"

namespace bagua {

enum class PeerMode { all, shift_one, ring };

// The shift_one partner of `rank` in communication round `round`, or `rank`
// itself when it sits out the round. Even n: rank r < n/2 meets n/2 + (r +
// round) mod n/2; odd n:
// round-robin ((round - rank) mod n), in which every pair meets once in n
// consecutive rounds.
int shift_one_peer(int rank, int n, int round);

// The distinct ranks among {rank - 1, rank + 1} (mod n), other than rank.
std::vector<int> ring_neighbours(int rank, int n);

// The peers of `rank` (excluding itself) for shift_one or ring in `round`.
std::vector<int> peers_of(PeerMode mode, int rank, int n, int round);

// dst = average of src and the same buffer on `peers`, summed in ascending
// rank order in float32 (float64 for f64) and rounded once. src may equal dst.
Status average_with_peers(AlgoContext &ctx, const void *src, void *dst, size_t count, DType t,
                          const std::vector<int> &peers);

// One asynchronous averaging update: w += reduced - temp, in float32 (float64
// for f64) and rounded once; keeps what was added to w since temp was taken.
void apply_average_delta(void *w, const void *reduced, const void *temp, size_t count, DType t);

// Replicas of low-precision ring averaging (float32): w is this rank's last
// communicated weights, left/right the copies of its neighbours' w.
struct LowprecReplicas {
  SendVector<float> self, left, right;
  Bytes encoded_self, encoded_left, encoded_right;
};

// The codec of the low-precision steps (the registry's lowprec wire) and
// its parameters.
struct LowprecCodec {
  const codec::HostCodecKernels &kernels;
  codec::CodecParams params;
};

// Fills the replicas from the initial weights `x`: exact exchange with the
// ring neighbours. Messages are q8 with `block` elements per block.
Status lowprec_init(AlgoContext &ctx, const void *x, size_t count, DType t,
                    const LowprecCodec &codec, LowprecReplicas *r);

// One low-precision step on weights x (in place), see bagua_lowprec_step.
Status lowprec_step(AlgoContext &ctx, void *x, size_t count, DType t, const LowprecCodec &codec,
                    LowprecReplicas *r);

}  // namespace bagua
