// The cost model of every algorithm bagua runs (doc/tools.md, "bagua-advise"):
// alpha-beta terms for each step, the codec and reduction passes at measured
// rates, the all-to-all (incast) efficiency and the CPU a transfer takes from
// the compute beside it. It advises, and the library does not read it:
// bagua-advise predicts with it and checks the library's policy against its
// crossover; the default BAGUA_RING_THRESHOLD is its crossover at the default
// parameters (test_cost_model checks they agree). Pure arithmetic,
// unit-tested without MPI.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "algo/allreduce.hpp"
#include "base/dtype.hpp"
#include "base/env.hpp"
#include "base/wires.hpp"
#include "core/call.hpp"

namespace bagua {

// One kind of link: `messages` messages of `bytes` in all, sent back to
// back, take messages x latency_s + the bytes' time: bytes_per_s up to
// sustained_after_bytes, sustained_bytes_per_s beyond (what a long transfer
// settles to; bagua-advise measures both). sustained_after_bytes 0: the
// whole transfer moves at bytes_per_s.
struct LinkCost {
  double latency_s;
  double bytes_per_s;
  double sustained_after_bytes = 0;
  double sustained_bytes_per_s = 0;
  bool slows_down() const { return sustained_after_bytes > 0 && sustained_bytes_per_s > 0; }
  double transfer_seconds(double bytes) const;
  double seconds(double bytes, double messages = 1) const {
    return messages * latency_s + transfer_seconds(bytes);
  }
};

// A codec's passes, in bytes of float32 (input or output) per second.
struct CodecRate {
  double encode_bytes_per_s;
  double accumulate_bytes_per_s;  // decode_accumulate into one segment's accumulator
  double decode_bytes_per_s;      // decode into a float32 buffer
};

// The overlap of compute and transfer read at one balance of a step,
// compute / (compute + transfer).
struct OverlapPoint {
  double balance = 0.5;
  double overlap = 0;
};

// What a prediction needs; bagua-advise measures it, default_cost_params
// gives the documented defaults.
struct CostParams {
  int ranks = 4;
  int ranks_per_node = 1;
  LinkCost intra{8e-6, 4e9};  // shared memory
  LinkCost inter{8e-6, 4e9};  // the network between nodes
  // All-to-all phases move each rank's bytes at this fraction of the link's
  // rate (1: no loss to incast, many senders converging on one receiver).
  double alltoall_efficiency = 1;
  // One round of small messages from every rank to every other, all ranks
  // at once, each waiting for its round (what a ByteGrad segment round costs
  // beyond its bytes; where ranks share cores, the time to schedule them
  // all). 0: (n-1) link latencies per phase only.
  double alltoall_round_s = 0;
  // The call check before data moves (BAGUA_CHECK_CALLS): one step of the
  // 16-byte recursive doubling among all ranks (agree_on_call pays
  // rd_steps(n) of them), and one exchange with the peers of a peer
  // averaging call (agree_with_peers). 0: no check.
  double call_check_step_s = 0;
  double peer_check_s = 0;
  // The CPU a transfer takes from the computation beside it, per message a
  // rank sends (its receive included): the kernel's network path, the
  // transport's progress and the scheduling of ranks that share cores. A
  // step whose compute needs the cores takes at least its compute plus this
  // (at most its whole transfer more). 0: transfers take no CPU.
  double transfer_cpu_message_s = 0;
  // Fraction of the shorter of compute and transfer hidden behind the other;
  // negative (down to -1): the fraction of it they add to each other, where
  // running at once slows both (ranks sharing cores). It depends on a
  // step's balance, compute / (compute + transfer): a step hides a long
  // transfer's compute differently from a long compute's transfer
  // (doc/benchmarks.md, "What was tried"). bagua-advise reads it at up
  // to two balances; a step between them takes the linear interpolation,
  // beyond them the nearer one's (two equal points: one overlap throughout).
  std::array<OverlapPoint, 2> overlap_at{};
  double overlap(double transfer, double compute) const;
  double reduce_bytes_per_s = 4e9;           // float32 sum, bytes of one operand
  std::array<CodecRate, kMaxWires> codec{};  // by Wire; exact's entry is unused
  size_t segment_bytes = size_t(env_default_int("BAGUA_SEGMENT_BYTES"));
  // BAGUA_CODEC_BLOCK (the wires whose block it sets).
  size_t codec_block = size_t(env_default_int("BAGUA_CODEC_BLOCK"));
  // BAGUA_RING_THRESHOLD, for decentralized `all`.
  size_t ring_threshold_bytes = size_t(env_default_int("BAGUA_RING_THRESHOLD"));

  int nodes() const { return (ranks + ranks_per_node - 1) / ranks_per_node; }
  // The link a flat algorithm's slowest step crosses.
  const LinkCost &flat_link() const { return nodes() > 1 ? inter : intra; }
};

// Documented defaults (doc/tools.md, "bagua-advise"): links of 8 us and 4 GB/s, sums at
// 4 GB/s, codecs at 1 GB/s, no overlap; 4 ranks on one node; the default
// ring threshold.
CostParams default_cost_params();

enum class Algorithm : uint8_t {
  exact_ring,
  exact_recursive_doubling,
  bytegrad,      // flat compressed allreduce of `wire`
  hierarchical,  // exact in the node, ByteGrad of `wire` among leaders
  decentralized_all,
  decentralized_shift_one,
  decentralized_ring,
  lowprec_ring,  // q8 model differences with both ring neighbours
};

// One row of the advice: what runs, and under which name.
struct AlgorithmRow {
  const char *name;
  Algorithm algorithm;
  Wire wire;
};

// Every algorithm the model covers, in the order bagua-advise prints them.
const std::vector<AlgorithmRow> &algorithm_rows();

// A prediction: time per step and what went into it.
struct Estimate {
  double seconds = 0;
  double transfer_s = 0;
  double compute_s = 0;
  double messages_per_rank = 0;  // messages rank 0 sends, as the library cuts them in segments
  size_t bytes_per_rank = 0;  // bytes rank 0 sends (the leader's), headers and call check counted
  std::string formula;        // the terms, in words and numbers
};

// An averaging allreduce of `count` float32 elements on host memory in
// `wire`: the call the model (and bagua-advise's codec timings) sizes.
Call float_call(Wire wire, size_t count);

// A step's balance of compute against transfer: compute / (compute +
// transfer), 0 without compute.
double balance_of(double transfer, double compute);

// Bytes of one message of `count` float32 elements in `wire`'s format
// (BAGUA_CODEC_BLOCK `block`), from the library's own codec.
size_t wire_message_bytes(Wire wire, size_t count, size_t block);

// Time of one step of `row` on a float32 buffer of `count` elements.
Estimate predict(const CostParams &p, const AlgorithmRow &row, size_t count);

// Whether the row exchanges gradients (an allreduce) or averages weights.
bool is_averaging(Algorithm a);

// Predictions closer than this fraction of the fastest are the same speed
// to the model (its mean error where calls exceed 10 ms is 5-8%,
// doc/benchmarks.md, "bagua-advise: predicted against measured").
constexpr double kSameSpeedFraction = 0.05;

// The seconds of each estimate, in order: what fastest and recommend rank.
std::vector<double> seconds_of(const std::vector<Estimate> &estimates);

// The one of `candidates` (indices into seconds) that takes the least time,
// the first on a tie. candidates must not be empty.
size_t fastest(const std::vector<double> &seconds, const std::vector<size_t> &candidates);

// The recommended one of `candidates` (indices into rows and seconds,
// predicted or measured): the most precise wire (the registry's precision
// rank) among those within kSameSpeedFraction of the fastest, the fastest
// of them on a tie: as fast, and less error in the gradients. candidates
// must not be empty.
size_t recommend(const std::vector<AlgorithmRow> &rows, const std::vector<double> &seconds,
                 const std::vector<size_t> &candidates);

// The smallest byte count from which the ring is no slower than recursive
// doubling under `p` (searched over powers of two up to 1 GiB, then
// bisected to 4 bytes); 0 when the ring always wins.
size_t ring_crossover_bytes(const CostParams &p);

// ring_crossover_bytes at default_cost_params, rounded down to a power of
// two: what the default BAGUA_RING_THRESHOLD is (the settings table's).
size_t ring_threshold_at_defaults();

}  // namespace bagua
