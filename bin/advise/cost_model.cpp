#include "cost_model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "core/run.hpp"

namespace bagua {

double LinkCost::transfer_seconds(double bytes) const {
  if (!slows_down() || bytes <= sustained_after_bytes) return bytes / bytes_per_s;
  return sustained_after_bytes / bytes_per_s +
         (bytes - sustained_after_bytes) / sustained_bytes_per_s;
}

double balance_of(double transfer, double compute) {
  return compute > 0 ? compute / (compute + transfer) : 0;
}

double CostParams::overlap(double transfer, double compute) const {
  const auto &[low, high] = overlap_at[0].balance <= overlap_at[1].balance
                                ? std::pair(overlap_at[0], overlap_at[1])
                                : std::pair(overlap_at[1], overlap_at[0]);
  const double balance = balance_of(transfer, compute);
  if (balance <= low.balance) return low.overlap;
  if (balance >= high.balance) return high.overlap;
  const double t = (balance - low.balance) / (high.balance - low.balance);
  return low.overlap + t * (high.overlap - low.overlap);
}

Call float_call(Wire wire, size_t count) {
  Call call{};
  call.family = Family::allreduce;
  call.wire = wire;
  call.count = count;
  call.dtype = DType::f32;
  call.op = ReduceOp::avg;
  call.memory = Memory::host;
  return call;
}

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string format(const char *fmt, double a, double b = 0, double c = 0, double d = 0) {
  char text[256];
  std::snprintf(text, sizeof(text), fmt, a, b, c, d);
  return text;
}

// The link's rate in MB/s, and the sustained rate beyond its first bytes.
std::string rate_term(const LinkCost &link) {
  std::string text = format("%.0f MB/s", link.bytes_per_s / 1e6);
  if (link.slows_down())
    text += format(" (%.0f MB/s beyond %.3f MiB back to back)", link.sustained_bytes_per_s / 1e6,
                   link.sustained_after_bytes / kMiB);
  return text;
}

// "k x alpha + k x bytes at rate": k messages of `bytes` back to back, in
// microseconds, MiB and MB/s.
std::string link_term(double steps, double bytes, const LinkCost &link) {
  return format("%.0f x %.1fus + %.0f x %.3f MiB at ", steps, link.latency_s * 1e6, steps,
                bytes / kMiB) +
         rate_term(link);
}

std::string pass_term(const char *what, double bytes, double rate) {
  return std::string(what) + format(" %.3f MiB / %.0f MB/s", bytes / kMiB, rate / 1e6);
}

// Transfer and compute combined: the overlapped fraction of the shorter one
// is hidden behind the longer (a negative overlap adds it), at the overlap
// of the step's balance.
Estimate combine(const CostParams &p, double transfer, double compute, std::string formula) {
  Estimate e;
  const double overlap = p.overlap(transfer, compute);
  e.transfer_s = transfer;
  e.compute_s = compute;
  e.seconds = transfer + compute - overlap * std::min(transfer, compute);
  e.formula = std::move(formula);
  const std::string balance = format(" (balance %.2f)", balance_of(transfer, compute));
  if (overlap > 0 && compute > 0)
    e.formula += format("; overlap %.2f of min(transfer, compute) hidden", overlap) + balance;
  if (overlap < 0 && compute > 0)
    e.formula += format("; contention %.2f of min(transfer, compute) added", -overlap) + balance;
  return e;
}

Options sizing_options(const CostParams &p) {
  Options o;
  o.segment_bytes = p.segment_bytes;
  for (const WireInfo &w : wires())
    if (w.block.setting != nullptr && std::strcmp(w.block.setting, "BAGUA_CODEC_BLOCK") == 0)
      o.compressed.blocks[size_t(w.id)] = uint32_t(p.codec_block);
  return o;
}

size_t bytes_sent(const CostParams &p, Wire wire, Schedule s, size_t count, int ranks) {
  if (ranks <= 1) return 0;
  return schedule_bytes_sent(float_call(wire, count), s, 0, ranks, sizing_options(p));
}

// Ring: 2(n-1) steps of one chunk (B/n) to the right neighbour; the n-1
// reduce-scatter steps each add one chunk.
Estimate ring(const CostParams &p, size_t count) {
  const int n = p.ranks;
  const double bytes = 4.0 * double(count), chunk = bytes / n, steps = 2.0 * (n - 1);
  const LinkCost &link = p.flat_link();
  const double transfer = link.seconds(steps * chunk, steps);
  const double reduced = (n - 1) * chunk;
  Estimate e = combine(p, transfer, reduced / p.reduce_bytes_per_s,
                       "2(n-1) steps: " + link_term(steps, chunk, link) + " + " +
                           pass_term("reduce", reduced, p.reduce_bytes_per_s));
  return e;
}

// Recursive doubling: log2(p) exchanges of the whole buffer among the largest
// power of two p <= n, plus a fold-in and a result-back step when n > p.
Estimate recursive_doubling(const CostParams &p, size_t count) {
  const int n = p.ranks, fold = n > recursive_doubling_group(n) ? 1 : 0;
  const double bytes = 4.0 * double(count), steps = recursive_doubling_steps(n);
  const double rounds = steps - 2 * fold;
  const LinkCost &link = p.flat_link();
  const double reduced = (rounds + fold) * bytes;
  Estimate e = combine(p, link.seconds(steps * bytes, steps), reduced / p.reduce_bytes_per_s,
                       "log2(p) (+2 fold) steps: " + link_term(steps, bytes, link) + " + " +
                           pass_term("reduce", reduced, p.reduce_bytes_per_s));
  return e;
}

// The latency part of one all-to-all phase of `rounds` segment rounds: n-1
// link latencies, or the measured rounds if they cost more.
double alltoall_latency(const CostParams &p, int n, int k, size_t rounds) {
  const LinkCost &link = n > k ? p.inter : p.intra;
  return std::max((n - 1) * link.latency_s, double(rounds) * p.alltoall_round_s);
}

// One all-to-all phase where each of n ranks (k per node) sends `message`
// bytes to every other in `rounds` segment rounds: the latency part, then
// the busiest of the node's network interface (k(n-k) messages) and the
// shared memory ((k-1) each).
double alltoall_seconds(const CostParams &p, int n, int k, double message, size_t rounds) {
  const double eff = p.alltoall_efficiency, latency = alltoall_latency(p, n, k, rounds);
  if (n <= k) return latency + p.intra.transfer_seconds((n - 1) * message / eff);
  const double network = p.inter.transfer_seconds(double(k) * (n - k) * message / eff);
  const double memory = p.intra.transfer_seconds((k - 1) * message);
  return latency + std::max(network, memory);
}

// ByteGrad among n ranks (k per node), as allreduce_compressed.cpp runs it:
// encode the n-1 other chunks and the reduced own one (B in all), all-to-all
// of encoded chunks, load the own chunk's exact values into the accumulator
// (B/n) and decode-accumulate the n-1 received ((n-1)/n B), all-to-all
// (allgather) of reduced chunks, decode all n into the result (B).
Estimate bytegrad_among(const CostParams &p, Wire wire, size_t count, int n, int k) {
  const double bytes = 4.0 * double(count);
  const double message = double(wire_message_bytes(wire, (count + n - 1) / n, p.codec_block));
  const size_t rounds = bytegrad_rounds(float_call(wire, count), n, sizing_options(p));
  const CodecRate rate = p.codec[size_t(wire)];
  const double accumulated = bytes * (n - 1) / n, loaded = bytes / n;
  const double transfer = 2 * alltoall_seconds(p, n, k, message, rounds);
  const double compute = bytes / rate.encode_bytes_per_s +
                         accumulated / rate.accumulate_bytes_per_s + loaded / p.reduce_bytes_per_s +
                         bytes / rate.decode_bytes_per_s;
  const LinkCost &link = n > k ? p.inter : p.intra;
  return combine(
      p, transfer, compute,
      format("2 all-to-alls of (n-1)=%.0f messages of %.3f MiB at ", n - 1, message / kMiB) +
          rate_term(link) + format(" x efficiency %.2f", p.alltoall_efficiency) +
          format(" (+2 x max(%.0f x %.1fus, %.0f rounds", n - 1, link.latency_s * 1e6,
                 double(rounds)) +
          format(" x %.1fus))", p.alltoall_round_s * 1e6) + " + " +
          pass_term("encode", bytes, rate.encode_bytes_per_s) + " + " +
          pass_term("load", loaded, p.reduce_bytes_per_s) + " + " +
          pass_term("accumulate", accumulated, rate.accumulate_bytes_per_s) + " + " +
          pass_term("decode", bytes, rate.decode_bytes_per_s));
}

// Hierarchical: the node's k-1 members send the buffer to their leader
// (incast on shared memory), ByteGrad among the leaders, the leader sends
// the result back to each member. Bytes: the leader's.
Estimate hierarchical(const CostParams &p, Wire wire, size_t count) {
  const int k = std::min(p.ranks_per_node, p.ranks), leaders = p.nodes();
  const double bytes = 4.0 * double(count);
  CostParams among = p;
  among.ranks = leaders;
  among.ranks_per_node = 1;
  among.alltoall_round_s = 0;  // measured among all ranks, not among the leaders
  const Estimate top = bytegrad_among(among, wire, count, leaders, 1);
  const double node_transfer = p.intra.seconds(2 * (k - 1) * bytes, 2);
  const double node_reduce = (k - 1) * bytes / p.reduce_bytes_per_s;
  Estimate node = combine(p, node_transfer, node_reduce,
                          "node: " + link_term(2, (k - 1) * bytes, p.intra) + " + " +
                              pass_term("reduce", (k - 1) * bytes, p.reduce_bytes_per_s));
  Estimate e;
  e.seconds = node.seconds + top.seconds;
  e.transfer_s = node.transfer_s + top.transfer_s;
  e.compute_s = node.compute_s + top.compute_s;
  e.formula = node.formula + "; leaders (" + std::to_string(leaders) + "): " + top.formula;
  return e;
}

// Peer averaging: each of `peers` messages of `message` bytes leaves over the
// rank's own link at once; `passes` passes over the buffer combine them.
Estimate peer_exchange(const CostParams &p, int peers, double message, double passes,
                       const char *what) {
  const LinkCost &link = p.flat_link();
  return combine(p, link.seconds(peers * message, peers), passes / p.reduce_bytes_per_s,
                 std::string(what) + ": " + link_term(peers, message, link) + " + " +
                     pass_term("average", passes, p.reduce_bytes_per_s));
}

// Low-precision ring: encode the model difference, send it to both
// neighbours, decode-accumulate three (both neighbours' and the own) into
// whole-buffer replicas, which miss the cache as a decode into a whole
// buffer does: they are charged at the decode rate.
Estimate lowprec_ring(const CostParams &p, size_t count) {
  const double bytes = 4.0 * double(count);
  const Wire wire = lowprec_wire().id;
  const double message = double(wire_message_bytes(wire, count, p.codec_block));
  const CodecRate rate = p.codec[size_t(wire)];
  const LinkCost &link = p.flat_link();
  const double compute = bytes / rate.encode_bytes_per_s + 3 * bytes / rate.decode_bytes_per_s +
                         2 * bytes / p.reduce_bytes_per_s;
  return combine(p, link.seconds(2 * message, 2), compute,
                 "2 neighbours: " + link_term(2, message, link) + " + " +
                     pass_term("encode", bytes, rate.encode_bytes_per_s) + " + " +
                     pass_term("decode", 3 * bytes, rate.decode_bytes_per_s) + " + " +
                     pass_term("update", 2 * bytes, p.reduce_bytes_per_s));
}

// `all` is the blocking exact average: the schedule the policy selects
// (BAGUA_RING_THRESHOLD), the ring or recursive doubling.
bool all_runs_ring(const CostParams &p, size_t count) {
  return 4 * count >= p.ring_threshold_bytes;
}

Estimate decentralized_all(const CostParams &p, size_t count) {
  return all_runs_ring(p, count) ? ring(p, count) : recursive_doubling(p, count);
}

}  // namespace

CostParams default_cost_params() {
  CostParams p;
  for (CodecRate &r : p.codec) r = {1e9, 1e9, 1e9};
  return p;
}

namespace {

// The rows: the exact schedules, each codec wire the allreduce offers flat
// and hierarchical, the decentralized modes, the low-precision ring.
std::vector<AlgorithmRow> make_algorithm_rows() {
  static std::deque<std::string> names;  // the rows' names (stable addresses)
  std::vector<AlgorithmRow> rows = {
      {"ring", Algorithm::exact_ring, Wire::exact},
      {"recursive_doubling", Algorithm::exact_recursive_doubling, Wire::exact},
  };
  for (const char *suffix : {"", "_hierarchical"})
    for (const WireInfo &w : wires()) {
      if (!is_codec(w.id) || !offers(Family::allreduce, w.id)) continue;
      names.push_back(std::string(w.name) + suffix);
      rows.push_back(
          {names.back().c_str(), *suffix ? Algorithm::hierarchical : Algorithm::bytegrad, w.id});
    }
  rows.push_back({"decentralized_all", Algorithm::decentralized_all, Wire::exact});
  rows.push_back({"decentralized_shift_one", Algorithm::decentralized_shift_one, Wire::exact});
  rows.push_back({"decentralized_ring", Algorithm::decentralized_ring, Wire::exact});
  rows.push_back({"lowprec_ring", Algorithm::lowprec_ring, lowprec_wire().id});
  return rows;
}

}  // namespace

const std::vector<AlgorithmRow> &algorithm_rows() {
  static const std::vector<AlgorithmRow> rows = make_algorithm_rows();
  return rows;
}

size_t wire_message_bytes(Wire wire, size_t count, size_t block) {
  CostParams p;
  p.codec_block = block;
  size_t bytes = 0;
  (void)message_bytes(float_call(wire, count), sizing_options(p), &bytes);
  return bytes;
}

bool is_averaging(Algorithm a) {
  return a == Algorithm::decentralized_all || a == Algorithm::decentralized_shift_one ||
         a == Algorithm::decentralized_ring || a == Algorithm::lowprec_ring;
}

namespace {

// Wires from the least error to the most (the registry's precision).
int precision_rank(Wire w) { return -wire_info(w).precision; }

}  // namespace

std::vector<double> seconds_of(const std::vector<Estimate> &estimates) {
  std::vector<double> seconds;
  for (const Estimate &e : estimates) seconds.push_back(e.seconds);
  return seconds;
}

size_t fastest(const std::vector<double> &seconds, const std::vector<size_t> &candidates) {
  return *std::min_element(candidates.begin(), candidates.end(),
                           [&](size_t x, size_t y) { return seconds[x] < seconds[y]; });
}

size_t recommend(const std::vector<AlgorithmRow> &rows, const std::vector<double> &seconds,
                 const std::vector<size_t> &candidates) {
  const double limit = (1 + kSameSpeedFraction) * seconds[fastest(seconds, candidates)];
  // Among the rows as fast as the fastest: the most precise, then the fastest.
  size_t best = candidates.front();
  bool have = false;
  for (size_t i : candidates) {
    if (seconds[i] > limit) continue;
    const int rank = precision_rank(rows[i].wire), best_rank = precision_rank(rows[best].wire);
    if (!have || rank < best_rank || (rank == best_rank && seconds[i] < seconds[best])) best = i;
    have = true;
  }
  return best;
}

namespace {

// The bytes one rank sends (the leader's in hierarchical mode), as the
// library counts them.
size_t bytes_per_rank(const CostParams &p, const AlgorithmRow &row, size_t count) {
  const size_t bytes = 4 * count;
  const int k = std::min(p.ranks_per_node, p.ranks);
  switch (row.algorithm) {
    case Algorithm::exact_ring: return bytes_sent(p, Wire::exact, Schedule::ring, count, p.ranks);
    case Algorithm::exact_recursive_doubling:
      return bytes_sent(p, Wire::exact, Schedule::recursive_doubling, count, p.ranks);
    case Algorithm::bytegrad: return bytes_sent(p, row.wire, Schedule::bytegrad, count, p.ranks);
    case Algorithm::hierarchical:
      return (k - 1) * bytes + bytes_sent(p, row.wire, Schedule::bytegrad, count, p.nodes());
    case Algorithm::decentralized_all:
      return bytes_sent(p, Wire::exact,
                        all_runs_ring(p, count) ? Schedule::ring : Schedule::recursive_doubling,
                        count, p.ranks);
    case Algorithm::decentralized_shift_one: return bytes;
    case Algorithm::decentralized_ring: return 2 * bytes;
    case Algorithm::lowprec_ring: return 2 * wire_message_bytes(row.wire, count, p.codec_block);
  }
  return 0;
}

// The messages one rank sends (the leader's in hierarchical mode): the
// ring's steps in segments, ByteGrad's segment rounds to each peer.
double messages_per_rank(const CostParams &p, const AlgorithmRow &row, size_t count) {
  const int n = p.ranks, k = std::min(p.ranks_per_node, p.ranks);
  const auto ring_messages = [&] {
    const size_t chunk = 4 * ((count + n - 1) / n), segment = std::max<size_t>(p.segment_bytes, 1);
    return 2.0 * (n - 1) * double((chunk + segment - 1) / segment);
  };
  const auto bytegrad_messages = [&](int ranks) {
    return 2.0 * (ranks - 1) *
           double(bytegrad_rounds(float_call(row.wire, count), ranks, sizing_options(p)));
  };
  switch (row.algorithm) {
    case Algorithm::exact_ring: return ring_messages();
    case Algorithm::exact_recursive_doubling: return recursive_doubling_steps(n);
    case Algorithm::bytegrad: return bytegrad_messages(n);
    case Algorithm::hierarchical: return 2.0 * (k - 1) + bytegrad_messages(p.nodes());
    case Algorithm::decentralized_all:
      return all_runs_ring(p, count) ? ring_messages() : recursive_doubling_steps(n);
    case Algorithm::decentralized_shift_one: return 1;
    case Algorithm::decentralized_ring:
    case Algorithm::lowprec_ring: return 2;
  }
  return 0;
}

// Where the transfer needs the cores that the computation needs: the step
// takes at least its compute plus the transfer's CPU (at most its whole
// transfer), when that outlasts the overlapped sum.
void bound_by_cpu(const CostParams &p, Estimate *e) {
  const double cpu = p.transfer_cpu_message_s * e->messages_per_rank;
  const double bound = e->compute_s + std::min(cpu, e->transfer_s);
  if (bound <= e->seconds) return;
  e->seconds = bound;
  e->formula +=
      format("; CPU-bound: compute %.3f ms + min(transfer %.3f ms, transfer CPU",
             e->compute_s * 1e3, e->transfer_s * 1e3) +
      format(" %.0f messages x %.1fus)", e->messages_per_rank, p.transfer_cpu_message_s * 1e6);
}

Estimate predict_time(const CostParams &p, const AlgorithmRow &row, size_t count) {
  const double bytes = 4.0 * double(count);
  switch (row.algorithm) {
    case Algorithm::exact_ring: return ring(p, count);
    case Algorithm::exact_recursive_doubling: return recursive_doubling(p, count);
    case Algorithm::bytegrad: return bytegrad_among(p, row.wire, count, p.ranks, p.ranks_per_node);
    case Algorithm::hierarchical: return hierarchical(p, row.wire, count);
    case Algorithm::decentralized_all: return decentralized_all(p, count);
    case Algorithm::decentralized_shift_one:
      return peer_exchange(p, 1, bytes, bytes, "1 peer, both ways");
    case Algorithm::decentralized_ring:
      return peer_exchange(p, 2, bytes, 2 * bytes, "2 neighbours");
    case Algorithm::lowprec_ring: return lowprec_ring(p, count);
  }
  return {};
}

// The call check every call pays before its data moves: exact peer
// averaging agrees with its peers, every other call among all ranks (`all`,
// the blocking exact average; low precision, whose refusal of a non-finite
// input must reach every rank; hierarchical calls too, before the node
// reduce).
double call_check_seconds(const CostParams &p, const AlgorithmRow &row) {
  const bool with_peers = is_averaging(row.algorithm) &&
                          row.algorithm != Algorithm::decentralized_all &&
                          row.algorithm != Algorithm::lowprec_ring;
  return with_peers ? p.peer_check_s : recursive_doubling_steps(p.ranks) * p.call_check_step_s;
}

}  // namespace

Estimate predict(const CostParams &p, const AlgorithmRow &row, size_t count) {
  if (p.ranks <= 1) return Estimate{0, 0, 0, 0, 0, "one rank: nothing to send"};
  Estimate e = predict_time(p, row, count);
  e.bytes_per_rank = bytes_per_rank(p, row, count);
  e.messages_per_rank = messages_per_rank(p, row, count);
  bound_by_cpu(p, &e);
  const double check = call_check_seconds(p, row);
  if (check > 0) {
    e.seconds += check;
    e.transfer_s += check;
    e.formula += format(" + call check %.1fus", check * 1e6);
  }
  return e;
}

size_t ring_crossover_bytes(const CostParams &p) {
  const auto ring_wins = [&](size_t bytes) {
    return ring(p, bytes / 4).seconds <= recursive_doubling(p, bytes / 4).seconds;
  };
  if (ring_wins(4)) return 0;
  // Doubling until the ring wins, then bisection between the last two sizes.
  size_t lo = 4, hi = 8;
  while (!ring_wins(hi)) {
    if (hi >= (size_t(1) << 30)) return hi;
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 4) {
    const size_t mid = (lo + hi) / 2 / 4 * 4;
    (ring_wins(mid) ? hi : lo) = mid;
  }
  return hi;
}

size_t ring_threshold_at_defaults() {
  const size_t crossover = ring_crossover_bytes(default_cost_params());
  size_t pow2 = 1;
  while (pow2 * 2 <= crossover) pow2 *= 2;
  return pow2;
}

}  // namespace bagua
