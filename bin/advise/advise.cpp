#include "advise.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <thread>

#include "algo/reduce.hpp"
#include "core/comm.hpp"
#include "core/options.hpp"
#include "core/run.hpp"

namespace bagua::advise {
namespace {

constexpr size_t kProbeBytes = size_t(4) << 20;  // large messages
// Codec and sum buffers: the model's size within these bounds, so that the
// passes hit or miss the caches as the collective's will (64 MiB on every
// rank misses them on any machine this runs on, as larger models do).
constexpr size_t kMinCodecBytes = size_t(1) << 20, kMaxCodecBytes = size_t(64) << 20;
constexpr int kLatencyRounds = 20;

double now() { return MPI_Wtime(); }

Status parse_size(const char *flag, const char *text, size_t *out) {
  char *end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  double scale = 1;
  if (end != text && *end != '\0') {
    switch (*end) {
      case 'K': scale = 1024.0; break;
      case 'M': scale = 1024.0 * 1024; break;
      case 'G': scale = 1024.0 * 1024 * 1024; break;
      default: scale = 0;
    }
    if (end[1] != '\0') scale = 0;
  }
  if (end == text || errno != 0 || scale == 0 || !(value * scale >= 4) || value * scale > 0x1p40)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s '%s': give bytes, 4 .. 1T, with an optional K, M or G suffix", flag, text);
  *out = size_t(value * scale) / 4 * 4;
  return BAGUA_SUCCESS;
}

Status parse_count(const char *flag, const char *text, int lo, int hi, int *out) {
  char *end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || value < lo || value > hi)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s '%s': give an integer %d .. %d", flag, text, lo,
                hi);
  *out = int(value);
  return BAGUA_SUCCESS;
}

Status parse_seconds(const char *flag, const char *text, double *out) {
  char *end = nullptr;
  errno = 0;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !(value >= 0 && value <= 3600))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s '%s': give seconds, 0 .. 3600", flag, text);
  *out = value;
  return BAGUA_SUCCESS;
}

// The middle of `v` (the upper one of an even count); v must not be empty.
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank 0 and `peer` bounce `bytes` back and forth; the others skip. Returns
// the median one-way time (0 on ranks not taking part).
double ping_pong(MPI_Comm comm, int peer, size_t bytes, int rounds) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<char> buffer(bytes);
  std::vector<double> times;
  if (rank != 0 && rank != peer) return 0;
  const int other = rank == 0 ? peer : 0;
  // Warm-up round first, then the timed ones.
  for (int i = 0; i <= rounds; ++i) {
    const double begin = now();
    if (rank == 0) {
      MPI_Send(buffer.data(), int(bytes), MPI_BYTE, other, 0, comm);
      MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, other, 0, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buffer.data(), int(bytes), MPI_BYTE, other, 0, comm, MPI_STATUS_IGNORE);
      MPI_Send(buffer.data(), int(bytes), MPI_BYTE, other, 0, comm);
    }
    if (i > 0) times.push_back((now() - begin) / 2);
  }
  return median(times);
}

// The measurements' messages go through the library's own transport, as
// BAGUA_TRANSPORT and BAGUA_MPI_PIECE_BYTES make it for the collectives (so
// they are cut and progressed as the collectives' messages are), on a
// duplicate of the measured communicator. Creation is collective.
class Probe {
 public:
  static Status create(MPI_Comm comm, const Options &options, std::unique_ptr<Probe> *out) {
    std::unique_ptr<Probe> probe(new Probe(options.timeout_ms));
    MPI_Comm_dup(comm, &probe->dup_);
    BAGUA_TRY(create_transport(options, probe->dup_, /*shared_by_threads=*/false, &probe->t_));
    *out = std::move(probe);
    return BAGUA_SUCCESS;
  }
  ~Probe() {
    t_.reset();
    MPI_Comm_free(&dup_);
  }
  Transport &transport() { return *t_; }
  MPI_Comm comm() const { return dup_; }
  int rank() const { return t_->rank(); }
  int size() const { return t_->size(); }
  Deadline deadline() const { return Deadline::after_ms(timeout_ms_); }
  // A library call's context on the probe's transport, in `tags` (apart
  // from the raw tags the probe's own exchanges use).
  AlgoContext call_context(CallTags tags, Bytes &scratch, const Options &options) {
    return AlgoContext{*t_, tags, deadline(), scratch, options.segment_bytes};
  }

 private:
  explicit Probe(int64_t timeout_ms) : timeout_ms_(timeout_ms) {}
  int64_t timeout_ms_;
  MPI_Comm dup_ = MPI_COMM_NULL;
  std::unique_ptr<Transport> t_;
};

// Tags of the library calls the probes make (above the raw tags 1-5 of the
// probes' own exchanges): the call checks, the q8 allreduce.
constexpr CallTags kCheckTags{32, 31}, kOverlapTags{64, 63};

// Posts a receive of `bytes` from the left and a send to the right, as a
// ring step does; requests[0] is the receive.
Status post_ring_step(Probe &probe, const char *out, char *in, size_t bytes, Tag tag,
                      Request requests[2]) {
  const int n = probe.size(), r = probe.rank();
  Transport &t = probe.transport();
  BAGUA_TRY(t.irecv(in, bytes, (r + n - 1) % n, tag, &requests[0]));
  return t.isend(out, bytes, (r + 1) % n, tag, &requests[1]);
}

// Probes repeat until they have run this long (at least kMinRounds timed
// rounds, at most kMaxRounds): on fast links, where a round lasts
// milliseconds, more rounds find the undisturbed one; on slow ones, 3
// rounds of 4 MiB at 8 ranks / 100 Mbit still missed the sustained rate by
// up to 25% (doc/benchmarks.md, "What was tried").
constexpr double kProbeSeconds = 0.2;
constexpr int kMinRounds = 5;
constexpr int kMaxRounds = 64;

// The times of `body` (a Status-returning step) run by every rank of
// `comm` at once: after one warm-up round, which sets the number of rounds
// (the same on every rank), `prepare` (untimed) and a barrier before each
// round, each round's time the slowest rank's. The rounds, preparation
// included, fill about kProbeSeconds. With `host` (the ranks sharing this
// rank's memory, which read the same monotonic clock) a rank's time is its
// host's span from the first start to the last end, so ranks that share
// cores share the time; with MPI_COMM_NULL it is the rank's own.
struct NoPreparation {
  void operator()() const {}
};

template <class Body, class Prepare = NoPreparation>
Status round_times(MPI_Comm comm, MPI_Comm host, Body body, std::vector<double> *out,
                   Prepare prepare = {}) {
  const auto seconds = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  // times[0]: the round's time; times[1]: the whole round, preparation included.
  const auto round = [&](double times[2]) {
    const double begin = seconds();
    prepare();
    MPI_Barrier(comm);
    double span[2] = {-seconds(), 0};  // -start, end: both maxima give the span
    BAGUA_TRY(body());
    span[1] = seconds();
    if (host != MPI_COMM_NULL) MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_DOUBLE, MPI_MAX, host);
    times[0] = span[0] + span[1];
    times[1] = span[1] - begin;
    MPI_Allreduce(MPI_IN_PLACE, times, 2, MPI_DOUBLE, MPI_MAX, comm);
    return BAGUA_SUCCESS;
  };
  double warm[2] = {0, 0};
  BAGUA_TRY(round(warm));
  const int rounds =
      std::clamp(int(std::ceil(kProbeSeconds / std::max(warm[1], 1e-6))), kMinRounds, kMaxRounds);
  out->clear();
  for (int i = 0; i < rounds; ++i) {
    double t[2] = {0, 0};
    BAGUA_TRY(round(t));
    out->push_back(t[0]);
  }
  return BAGUA_SUCCESS;
}

// The best of round_times. The best round stands for the sustained rate a
// long collective reaches: rounds of a few MiB on a shaped TCP link vary
// from 60% to 95% of its rate with TCP's window, which a long transfer
// amortizes.
template <class Body, class Prepare = NoPreparation>
Status best_time(MPI_Comm comm, MPI_Comm host, Body body, double *out, Prepare prepare = {}) {
  std::vector<double> times;
  BAGUA_TRY(round_times(comm, host, body, &times, prepare));
  *out = *std::min_element(times.begin(), times.end());
  return BAGUA_SUCCESS;
}

// The median of round_times: a typical call of a collective, as a training
// step meets it (the same on every rank: each round's time is the slowest
// rank's).
template <class Body>
Status median_time(MPI_Comm comm, Body body, double *out) {
  std::vector<double> times;
  BAGUA_TRY(round_times(comm, MPI_COMM_NULL, body, &times));
  *out = median(times);
  return BAGUA_SUCCESS;
}

// A transfer's time over the probe's ranks (best_time, per rank).
template <class Body>
Status timed_exchange(Probe &probe, Body body, double *out) {
  return best_time(probe.comm(), MPI_COMM_NULL, body, out);
}

// Every rank sends `bytes` right while receiving from the left.
Status ring_exchange(Probe &probe, size_t bytes, double *out) {
  std::vector<char> send(bytes), recv(bytes);
  return timed_exchange(
      probe,
      [&] {
        Request requests[2];
        BAGUA_TRY(post_ring_step(probe, send.data(), recv.data(), bytes, 1, requests));
        return wait_all(probe.transport(), requests, probe.deadline());
      },
      out);
}

// Posts one all-to-all: every rank sends `message` bytes to every other at
// once (ByteGrad's scatter), each peer starting from the right. `send` and
// `recv` hold one message per rank, `requests` 2n entries.
Status post_alltoall(Probe &probe, const std::vector<char> &send, std::vector<char> &recv,
                     size_t message, Tag tag, std::vector<Request> &requests) {
  const int n = probe.size(), r = probe.rank();
  Transport &t = probe.transport();
  for (int k = 1; k < n; ++k) {
    const int from = (r + n - k) % n, to = (r + k) % n;
    BAGUA_TRY(
        t.irecv(recv.data() + size_t(from) * message, message, from, tag, &requests[size_t(k)]));
    BAGUA_TRY(
        t.isend(send.data() + size_t(to) * message, message, to, tag, &requests[size_t(n + k)]));
  }
  return BAGUA_SUCCESS;
}

// One all-to-all (post_alltoall), waiting for all of it.
Status alltoall_step(Probe &probe, const std::vector<char> &send, std::vector<char> &recv,
                     size_t message, Tag tag, std::vector<Request> &requests) {
  BAGUA_TRY(post_alltoall(probe, send, recv, message, tag, requests));
  return wait_all(probe.transport(), requests, probe.deadline());
}

// The time of one all-to-all of `message` bytes to every other rank.
Status alltoall_exchange(Probe &probe, size_t message, double *out) {
  const size_t n = size_t(probe.size());
  std::vector<char> send(message * n), recv(message * n);
  std::vector<Request> requests(2 * n);
  return timed_exchange(
      probe, [&] { return alltoall_step(probe, send, recv, message, 2, requests); }, out);
}

// The time of one short exchange that calls make one after another (a
// segment round, a call check): the mean of kDependentRounds runs of `step`
// in one timed body, each waiting for the last.
constexpr int kDependentRounds = 16;
template <class Step>
Status timed_dependent_rounds(Probe &probe, Step step, double *out) {
  double body = 0;
  BAGUA_TRY(timed_exchange(
      probe,
      [&] {
        for (int round = 0; round < kDependentRounds; ++round) BAGUA_TRY(step());
        return BAGUA_SUCCESS;
      },
      &body));
  *out = body / kDependentRounds;
  return BAGUA_SUCCESS;
}

// One all-to-all round of 8-byte messages, every rank at once, as
// ByteGrad's segment rounds follow each other.
Status alltoall_round(Probe &probe, double *out) {
  constexpr size_t kMessage = 8;
  const size_t n = size_t(probe.size());
  std::vector<char> send(kMessage * n), recv(kMessage * n);
  std::vector<Request> requests(2 * n);
  return timed_dependent_rounds(
      probe, [&] { return alltoall_step(probe, send, recv, kMessage, 4, requests); }, out);
}

// The call checks as the collectives make them, one call after another,
// through the probe's transport: the library's agree_on_call among all
// ranks (a 16-byte recursive doubling; the model charges it per step, so it
// extrapolates with the rank count) and agree_with_peers with the ring
// neighbours.
// Both stay 0 when BAGUA_CHECK_CALLS=0 turns the check off.
Status measure_call_checks(Probe &probe, const Options &options, CostParams *p) {
  if (!options.check_calls) return BAGUA_SUCCESS;
  const Call call = float_call(Wire::exact, 1);
  const std::vector<int> peers = ring_neighbours(probe.rank(), probe.size());
  Bytes scratch;
  double all = 0;
  BAGUA_TRY(timed_dependent_rounds(
      probe,
      [&] {
        AlgoContext ctx = probe.call_context(kCheckTags, scratch, options);
        return agree_on_call(ctx, call, Schedule::ring, options);
      },
      &all));
  BAGUA_TRY(timed_dependent_rounds(
      probe,
      [&] {
        AlgoContext ctx = probe.call_context(kCheckTags, scratch, options);
        return agree_with_peers(ctx, call, 0, peers, options);
      },
      &p->peer_check_s));
  p->call_check_step_s = all / recursive_doubling_steps(probe.size());
  return BAGUA_SUCCESS;
}

// The codec of `wire` as the library builds it for a float32 call.
struct CodecUnderTest {
  SignFeedback feedback;
  std::unique_ptr<ChunkCodec> codec;
  CodecUnderTest(Wire wire, size_t count, int ranks, const Options &options)
      : feedback(MPI_COMM_NULL, count) {
    Call call = float_call(wire, count);
    call.feedback = &feedback;
    codec = make_call_codec(call, ranks, options);
  }
};

// Bytes of the last-level cache (Linux sysfs, cpu0's highest cache level);
// 32 MiB where it cannot be read.
size_t last_level_cache_bytes() {
  size_t bytes = size_t(32) << 20;
  for (int level = 0, index = 0;; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    FILE *level_file = std::fopen((dir + "/level").c_str(), "r");
    FILE *size_file = std::fopen((dir + "/size").c_str(), "r");
    int this_level = 0;
    unsigned long kib = 0;
    const bool read = level_file != nullptr && size_file != nullptr &&
                      std::fscanf(level_file, "%d", &this_level) == 1 &&
                      std::fscanf(size_file, "%luK", &kib) == 1;
    if (level_file != nullptr) std::fclose(level_file);
    if (size_file != nullptr) std::fclose(size_file);
    if (!read) return bytes;
    if (this_level > level) {
      level = this_level;
      bytes = size_t(kib) << 10;
    }
  }
}

// The machine's CPU ticks so far (Linux /proc/stat's first line): those a
// hypervisor gave to other guests (steal) and all of them.
struct CpuTicks {
  double steal = 0, total = 0;
};

bool read_cpu_ticks(CpuTicks *out) {
  FILE *stat = std::fopen("/proc/stat", "r");
  if (stat == nullptr) return false;
  unsigned long long user, nice, system, idle, iowait, irq, softirq, steal;
  const bool read = std::fscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice,
                                &system, &idle, &iowait, &irq, &softirq, &steal) == 8;
  std::fclose(stat);
  if (!read) return false;
  out->steal = double(steal);
  out->total = double(user + nice + system + idle + iowait + irq + softirq + steal);
  return true;
}

// The share of the CPU stolen since `start` on the host where it was most
// (every rank reads its own machine), as a note: the probes keep their best
// rounds, so a host that loses more than a few percent runs its calls
// slower than predicted. No note where /proc/stat cannot be read.
void note_steal(MPI_Comm comm, bool have_start, const CpuTicks &start, Measurement *m) {
  CpuTicks end;
  double share = -1;
  if (have_start && read_cpu_ticks(&end) && end.total > start.total)
    share = (end.steal - start.steal) / (end.total - start.total);
  MPI_Allreduce(MPI_IN_PLACE, &share, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (share < 0) return;
  char text[200];
  std::snprintf(text, sizeof text,
                "steal: %.1f%% of the CPU went to other virtual machines while measuring, "
                "the most on any host; the rates above are the best rounds'",
                100 * share);
  m->notes.push_back(text);
}

// What each rank reads before a codec round so that the round starts with
// cold caches, as the collective's passes do (its buffers, scratch and the
// transport's copies exceed the cache, and in training the backward pass
// runs in between): twice the last-level cache among the host's ranks.
class CacheEviction {
 public:
  explicit CacheEviction(MPI_Comm host) {
    int ranks = 1;
    if (host != MPI_COMM_NULL) MPI_Comm_size(host, &ranks);
    bytes_.assign(2 * last_level_cache_bytes() / size_t(ranks), 1);
  }
  // Reads one byte of each cache line of the buffer.
  void operator()() {
    unsigned sum = 0;
    for (size_t i = 0; i < bytes_.size(); i += kLine) sum += bytes_[i];
    sink_ = sum;
  }

 private:
  static constexpr size_t kLine = 64;
  std::vector<unsigned char> bytes_;
  volatile unsigned sink_ = 0;
};

// A computation's time on every rank at once, per host (best_time), each
// round from cold caches.
template <class Body>
double timed_on_all(MPI_Comm comm, MPI_Comm host, CacheEviction &evict, Body body) {
  double t = 0;
  best_time(
      comm, host,
      [&] {
        body();
        return BAGUA_SUCCESS;
      },
      &t, [&] { evict(); });
  return t;
}

std::vector<float> gradient_like(size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = std::sin(0.001f * float(i)) * 1e-3f;
  return v;
}

// The codec passes as ByteGrad makes them, segment by segment (the
// collective's BAGUA_SEGMENT_BYTES): encode into per-segment messages,
// decode-accumulate each into one segment's accumulator (which stays in
// cache), decode each into a float32 buffer of the whole size.
void measure_codecs(MPI_Comm comm, MPI_Comm host, const Options &options, size_t model_bytes,
                    Measurement *m) {
  const size_t bytes = std::clamp(model_bytes / 4 * 4, kMinCodecBytes, kMaxCodecBytes);
  const size_t count = bytes / 4;
  const size_t segment = std::min(count, std::max<size_t>(options.segment_bytes / 4, 1));
  const std::vector<float> src = gradient_like(count);
  std::vector<float> acc(segment), dst(count);
  CacheEviction evict(host);
  const double sum_s = timed_on_all(comm, host, evict, [&] {
    reduce_combine(dst.data(), dst.data(), src.data(), count, DType::f32, ReduceOp::sum);
  });
  m->params.reduce_bytes_per_s = double(bytes) / sum_s;
  std::set<Wire> wires;
  for (const AlgorithmRow &row : algorithm_rows())
    if (row.wire != Wire::exact) wires.insert(row.wire);
  for (Wire w : wires) {
    CodecUnderTest c(w, count, 2, options);
    const size_t slot = c.codec->encoded_bytes(segment);
    std::vector<unsigned char> encoded(slot * ((count + segment - 1) / segment));
    // Each pass visits the segments in order; the last may be shorter.
    const auto each_segment = [&](auto pass) {
      for (size_t begin = 0, k = 0; begin < count; begin += segment, ++k)
        pass(begin, std::min(segment, count - begin), encoded.data() + k * slot);
    };
    const double enc = timed_on_all(comm, host, evict, [&] {
      each_segment([&](size_t begin, size_t n, unsigned char *out) {
        c.codec->encode(ChunkCodec::Stage::contribution, begin, src.data() + begin, DType::f32, n,
                        out);
      });
    });
    const double accumulate = timed_on_all(comm, host, evict, [&] {
      each_segment([&](size_t, size_t n, unsigned char *in) {
        c.codec->decode_accumulate(in, c.codec->encoded_bytes(n), n, acc.data());
      });
    });
    const double decode = timed_on_all(comm, host, evict, [&] {
      each_segment([&](size_t begin, size_t n, unsigned char *in) {
        c.codec->decode(in, c.codec->encoded_bytes(n), n, dst.data() + begin, DType::f32);
      });
    });
    m->params.codec[size_t(w)] = {double(bytes) / enc, double(bytes) / accumulate,
                                  double(bytes) / decode};
  }
  m->notes.push_back("codec and sum rates: " + std::to_string(bytes) +
                     " bytes of float32 (the model's size, 1 MiB .. 64 MiB) in "
                     "BAGUA_SEGMENT_BYTES segments on every rank at once, "
                     "per rank: from the first start to the last end on a host, so ranks "
                     "sharing cores share the rate (best of rounds filling 0.2 s, at least 5, "
                     "each from cold caches; CPU; GPU codecs not measured)");
}

// Node of each rank: --ranks-per-node groups consecutive ranks, otherwise
// the ranks sharing memory (MPI_Comm_split_type). Returns the node comm.
MPI_Comm split_nodes(MPI_Comm comm, const Args &args, int *ranks_per_node) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node = MPI_COMM_NULL;
  if (args.ranks_per_node > 0)
    MPI_Comm_split(comm, rank / args.ranks_per_node, rank, &node);
  else
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_size = 1;
  MPI_Comm_size(node, &node_size);
  MPI_Allreduce(&node_size, ranks_per_node, 1, MPI_INT, MPI_MAX, comm);
  return node;
}

// Bandwidth probe rounds last at least this long: on a fast link a round
// of 4 MiB lasts milliseconds, and its best one catches a moment when no
// other process needed the cores, which a collective moving its megabytes
// back to back does not (2 ranks on 10 Gbit: rounds of 4 MiB at best 97% of
// the rate, of 32 MiB 75%, the ring allreduce 76%; doc/benchmarks.md, "What was tried").
constexpr double kMinBandwidthRoundSeconds = 0.025;
constexpr size_t kMaxProbeBytes = size_t(64) << 20;

// Longer transfers settle below the rate of the bandwidth rounds: on 2 ranks
// / 10 Gbit the ring allreduce moved its bytes beyond the first 16 MiB at
// about 600 MB/s against the rounds' 850 (doc/benchmarks.md, "What was
// tried"). A second ring exchange of up to kSustainedScale
// times the bytes, its rounds at most kMaxSustainedRoundSeconds, measures the marginal rate beyond
// the first probe's bytes; it is skipped where that allows less than twice the bytes (slow links,
// whose rounds already last).
constexpr size_t kSustainedScale = 4;
constexpr double kMaxSustainedRoundSeconds = 0.15;

// The link's sustained rate beyond `bytes`, which one ring exchange moved
// in `t` seconds (the slowest rank's, so every rank of the ring decides
// alike): left unset where the longer exchange is no slower.
Status measure_sustained(Probe &probe, size_t bytes, double t, LinkCost *link) {
  const size_t longer =
      std::min({kMaxProbeBytes, kSustainedScale * bytes,
                size_t(kMaxSustainedRoundSeconds * double(bytes) / std::max(t, 1e-9))}) /
      4096 * 4096;
  if (longer < 2 * bytes) return BAGUA_SUCCESS;
  double t_longer = 0;
  BAGUA_TRY(ring_exchange(probe, longer, &t_longer));
  const double marginal = double(longer - bytes) / std::max(t_longer - t, 1e-9);
  if (marginal >= link->bytes_per_s) return BAGUA_SUCCESS;
  link->sustained_after_bytes = double(bytes);
  link->sustained_bytes_per_s = marginal;
  return BAGUA_SUCCESS;
}

// Latency from rank 0 to `peer` (ping-pong of 8 bytes), bandwidth from a
// concurrent ring exchange over `ring` (what a ring step sees: both
// directions at once, every rank busy) of 4 MiB, or of more where rounds of
// 4 MiB are shorter than kMinBandwidthRoundSeconds; then the sustained rate
// beyond those bytes (measure_sustained).
Status measure_link(MPI_Comm comm, int peer, MPI_Comm ring, const Options &options, LinkCost *out) {
  double latency = ping_pong(comm, peer, 8, kLatencyRounds);
  MPI_Bcast(&latency, 1, MPI_DOUBLE, 0, comm);
  LinkCost link{latency, 0};
  if (ring != MPI_COMM_NULL) {
    std::unique_ptr<Probe> probe;
    double t = 0;
    size_t bytes = kProbeBytes;
    BAGUA_TRY(Probe::create(ring, options, &probe));
    BAGUA_TRY(ring_exchange(*probe, bytes, &t));
    // t is the slowest rank's, so every rank of the ring picks the same size.
    if (t < kMinBandwidthRoundSeconds) {
      const double scale = kMinBandwidthRoundSeconds / std::max(t, 1e-9);
      bytes = std::min(kMaxProbeBytes, size_t(double(bytes) * scale) / 4096 * 4096);
      BAGUA_TRY(ring_exchange(*probe, bytes, &t));
    }
    link.bytes_per_s = double(bytes) / std::max(t - latency, 1e-9);
    BAGUA_TRY(measure_sustained(*probe, bytes, t, &link));
  }
  // The ring's ranks measured; the others learn it (their values are 0).
  double rates[3] = {link.bytes_per_s, link.sustained_after_bytes, link.sustained_bytes_per_s};
  MPI_Allreduce(MPI_IN_PLACE, rates, 3, MPI_DOUBLE, MPI_MAX, comm);
  *out = {latency, rates[0], rates[1], rates[2]};
  return BAGUA_SUCCESS;
}

// The q8 transfer the overlap probe needs at the least: a shorter one fits
// the shaper's token bucket of an emulated link (bench/netemu.sh: 256 KB)
// and beats the link rate, which would read as overlap.
constexpr double kMinOverlapTransferSeconds = 0.025;
// The longest q8 call (the model's time without overlap) the overlap probe
// makes: a larger model is probed at the size whose call lasts this long.
constexpr double kMaxOverlapCallSeconds = 0.25;

// `p` without the call check (which runs before data moves, so nothing
// overlaps it).
CostParams without_call_check(const CostParams &p) {
  CostParams unchecked = p;
  unchecked.call_check_step_s = 0;
  return unchecked;
}

// `count`, or fewer elements (whole KiB, at least 1 KiB) where `row`'s call
// under `p` would outlast kMaxOverlapCallSeconds.
size_t capped_by_call(const CostParams &p, const AlgorithmRow &row, size_t count) {
  const double call = predict(p, row, count).seconds;
  if (call <= kMaxOverlapCallSeconds) return count;
  return std::max<size_t>(1024,
                          size_t(double(count) * kMaxOverlapCallSeconds / call) / 1024 * 1024);
}

// The float32 elements the overlap probe's q8 call reduces: the model's, at
// least 4 MiB or what makes the transfer last kMinOverlapTransferSeconds, at
// most 64 MiB or what makes the call last kMaxOverlapCallSeconds. How much
// ByteGrad hides depends on the size: at 8 ranks / 10 Gbit, q8 hid 0.53 of
// the shorter of transfer and compute on 8 MiB, 0.11 on 16 MiB
// (doc/benchmarks.md, "What was tried").
size_t overlap_probe_count(const CostParams &serial, const AlgorithmRow &q8, size_t model_bytes) {
  const CostParams unchecked = without_call_check(serial);
  size_t least = kProbeBytes / 4;
  const double transfer_at_4mib = predict(unchecked, q8, least).transfer_s;
  if (transfer_at_4mib < kMinOverlapTransferSeconds)
    least = std::min(kMaxProbeBytes / 4, size_t(double(least) * kMinOverlapTransferSeconds /
                                                std::max(transfer_at_4mib, 1e-9)) /
                                             1024 * 1024);
  const size_t count = std::clamp(model_bytes / 4, least, kMaxProbeBytes / 4);
  return std::max(least, capped_by_call(unchecked, q8, count));
}

// The ByteGrad row of `wire`.
const AlgorithmRow &bytegrad_row(Wire wire) {
  for (const AlgorithmRow &row : algorithm_rows())
    if (row.algorithm == Algorithm::bytegrad && row.wire == wire) return row;
  return algorithm_rows().front();
}

// `row`'s balance in the model, compute / (compute + transfer), the call
// check apart (CostParams::overlap).
double balance(const CostParams &serial, const AlgorithmRow &row, size_t count) {
  const Estimate e = predict(without_call_check(serial), row, count);
  return balance_of(e.transfer_s, e.compute_s);
}

// What one ByteGrad call hides: the median call of the library's allreduce
// of `row` on `count` float32 elements (run_flat, call check included)
// against the model's time for it without overlap (`serial`), as a
// fraction of the shorter of its transfer and compute, in [-1, 1].
Status read_overlap(Probe &probe, const Options &options, const CostParams &serial,
                    const AlgorithmRow &row, size_t count, double *out) {
  const std::vector<float> src = gradient_like(count);
  std::vector<float> dst(count);
  SignFeedback feedback(probe.comm(), wire_info(row.wire).error_feedback ? count : 0);
  Call call = float_call(row.wire, count);
  call.src = src.data();
  call.dst = dst.data();
  call.comm = probe.comm();
  call.feedback = &feedback;  // sign's error feedback, as its calls carry it
  Bytes scratch;
  double measured = 0;
  BAGUA_TRY(median_time(
      probe.comm(),
      [&] {
        AlgoContext ctx = probe.call_context(kOverlapTags, scratch, options);
        return run_flat(ctx, call, schedule_info(Schedule::bytegrad), options);
      },
      &measured));
  const Estimate e = predict(serial, row, count);
  // The call check (in e.transfer_s) cannot overlap: it runs before data moves.
  const double transfer = predict(without_call_check(serial), row, count).transfer_s;
  const double hidden = (e.seconds - measured) / std::max(std::min(transfer, e.compute_s), 1e-9);
  *out = std::clamp(hidden, -1.0, 1.0);
  return BAGUA_SUCCESS;
}

// The compressed row whose balance at `count` is furthest from q8's
// (`q8_balance`) on the other side of 0.5 (compute the longer where q8's
// transfer is, or the reverse); nullptr where every one is on q8's side.
const AlgorithmRow *other_side_row(const CostParams &serial, size_t count, double q8_balance) {
  const bool q8_compute_bound = q8_balance > 0.5;
  const AlgorithmRow *furthest = nullptr;
  double furthest_balance = 0.5;
  for (const AlgorithmRow &row : algorithm_rows()) {
    if (row.algorithm != Algorithm::bytegrad) continue;
    const double b = balance(serial, row, count);
    if (q8_compute_bound ? b < furthest_balance : b > furthest_balance)
      furthest = &row, furthest_balance = b;
  }
  return furthest;
}

// Overlap at up to two balances (CostParams::overlap): how much of the
// shorter of transfer and compute ByteGrad hides behind the other, from
// the collective itself (read_overlap): q8 at about the model's size
// (overlap_probe_count), and where another compressed wire falls on the
// other side of compute and transfer at that size (sign, compute-bound,
// where q8 is transfer-bound on a slow link), the one furthest on it; with
// q8 alone, one overlap throughout. A step hides differently at each
// balance: at 2 ranks / 1 Gbit, q8 (compute the shorter) hid a positive
// fraction while sign (the transfer the shorter) ran slower than its
// serial sum (doc/benchmarks.md, "What was tried"). ByteGrad encodes
// segment k+1 while segment k is in flight; a synthetic probe (encodes
// between the tests of one ring exchange) read no overlap at 10 Gbit where
// q8 hid about 70% of its compute (doc/benchmarks.md, "What was tried"). Negative where the
// call outlasts the sum: 8 ranks on 2 cores, each waking for every message
// while the others encode, added up to 0.9 of the shorter
// (doc/benchmarks.md, "What was tried"); at most its whole time again. The
// median, not the best call: the best of a probe's rounds caught the one
// the scheduler ran well, and a training step meets the typical one.
Status measure_overlap(Probe &probe, const Options &options, size_t model_bytes, CostParams *p) {
  CostParams serial = *p;
  serial.overlap_at = {};
  const AlgorithmRow &q8 = bytegrad_row(lowprec_wire().id);  // the 8-bit codec
  const size_t count = overlap_probe_count(serial, q8, model_bytes);
  OverlapPoint read{balance(serial, q8, count), 0};
  BAGUA_TRY(read_overlap(probe, options, serial, q8, count, &read.overlap));
  p->overlap_at = {read, read};
  if (const AlgorithmRow *other = other_side_row(serial, count, read.balance)) {
    const size_t other_count = capped_by_call(serial, *other, count);
    OverlapPoint &second = p->overlap_at[1];
    second.balance = balance(serial, *other, other_count);
    BAGUA_TRY(read_overlap(probe, options, serial, *other, other_count, &second.overlap));
  }
  return BAGUA_SUCCESS;
}

// The all-to-all efficiency: the model's time of a 4 MiB all-to-all at the
// measured link rate over the measured time.
Status measure_alltoall_efficiency(Probe &probe, const CostParams &p, double *out) {
  const int size = probe.size();
  const size_t message = kProbeBytes / size_t(std::max(size - 1, 1));
  double t = 0;
  BAGUA_TRY(alltoall_exchange(probe, message, &t));
  const LinkCost &link = p.flat_link();
  const double latency = (size - 1) * link.latency_s;
  // Invert t = latency + bytes / (rate x efficiency) for the efficiency.
  const double transfer_ideal = link.transfer_seconds((size - 1) * double(message));
  const int k = p.ranks_per_node;
  const double network = p.nodes() > 1
                             ? p.inter.transfer_seconds(double(k) * (size - k) * double(message))
                             : transfer_ideal;
  *out = std::clamp(network / std::max(t - latency, 1e-9), 0.05, 1.0);
  return BAGUA_SUCCESS;
}

// The unit of computation the transfer-CPU probe runs between tests: a
// float32 sum over 64 KiB that stays in the core's cache (adding zeros, so
// the values never change).
class ComputeSlice {
 public:
  ComputeSlice() : a_(kFloats, 1.0f), b_(kFloats, 0.0f) {}
  void operator()() {
    reduce_combine(a_.data(), a_.data(), b_.data(), kFloats, DType::f32, ReduceOp::sum);
  }

 private:
  static constexpr size_t kFloats = 16384;
  std::vector<float> a_, b_;
};

// `rounds` all-to-all rounds of `message` bytes to every other rank, one
// after another as ByteGrad's segment rounds, with `slices` compute slices
// run between the tests of the requests in flight (and after the last round
// until all are done): what a CPU-bound collective does.
// `send` and `recv` hold at least one message per rank.
Status alltoall_rounds_with_compute(Probe &probe, size_t message, int rounds, int slices,
                                    ComputeSlice &slice, std::vector<char> &send,
                                    std::vector<char> &recv) {
  Transport &t = probe.transport();
  std::vector<Request> requests(2 * size_t(probe.size()));
  int done_slices = 0;
  for (int round = 0; round < rounds; ++round) {
    BAGUA_TRY(post_alltoall(probe, send, recv, message, 5, requests));
    // Test every request in flight, one compute slice between the sweeps.
    for (bool pending = true; pending;) {
      pending = false;
      for (Request &req : requests) {
        if (!req.active) continue;
        bool done = false;
        BAGUA_TRY(t.test(&req, &done));
        pending = pending || !done;
      }
      if (pending && done_slices < slices) {
        slice();
        ++done_slices;
      } else if (pending) {
        std::this_thread::yield();
      }
    }
  }
  for (; done_slices < slices; ++done_slices) slice();
  return BAGUA_SUCCESS;
}

// The transfer beside the compute: ByteGrad-like rounds of messages of at
// most 16 KiB (the smallest that the lowest-bit wires send), as many as about 3 ms of the
// measured link carry, so that the link's own time stays far inside the
// compute beside it (a longer transfer, stretched by the scheduling of ranks
// that share cores, outlasts the compute and reads as CPU).
constexpr int kTransferCpuRounds = 64;
constexpr double kTransferCpuLinkSeconds = 0.003;
constexpr size_t kMaxSmallMessage = 16384;
constexpr int kCalibrationSlices = 4096;
constexpr int kTransferCpuRepeats = 3;

// What the transfer delays the compute beside it in one repetition: every
// rank runs compute slices lasting about four times the transfer (at least
// 40 ms), alone and between the tests of the transfer's requests.
Status transfer_delay_once(Probe &probe, size_t message, int slices, ComputeSlice &slice,
                           double *out) {
  std::vector<char> send(message * size_t(probe.size())), recv(send.size());
  const auto timed = [&](int rounds, double *t) {
    return timed_exchange(
        probe,
        [&] {
          return alltoall_rounds_with_compute(probe, message, rounds, slices, slice, send, recv);
        },
        t);
  };
  double compute = 0, with_transfer = 0;
  BAGUA_TRY(timed(0, &compute));
  BAGUA_TRY(timed(kTransferCpuRounds, &with_transfer));
  *out = std::max(0.0, with_transfer - compute);
  return BAGUA_SUCCESS;
}

// The CPU a transfer takes from the computation beside it, per message a
// rank sends (each rank receives as many): the median over
// kTransferCpuRepeats repetitions (the scheduler's placement of ranks
// sharing cores changes between them) of what the transfer delays the
// compute, over its messages.
Status measure_transfer_cpu(Probe &probe, CostParams *p) {
  const int n = probe.size();
  const double rate = p->flat_link().bytes_per_s;
  const size_t per_peer = size_t(rate * kTransferCpuLinkSeconds / (n - 1));
  const size_t message =
      std::clamp<size_t>(per_peer / kTransferCpuRounds / 1024 * 1024, 1024, kMaxSmallMessage);
  ComputeSlice slice;
  double slice_s = 0, transfer = 0;
  BAGUA_TRY(timed_exchange(
      probe,
      [&] {
        for (int i = 0; i < kCalibrationSlices; ++i) slice();
        return BAGUA_SUCCESS;
      },
      &slice_s));
  BAGUA_TRY(alltoall_exchange(probe, message * kTransferCpuRounds, &transfer));
  const int slices =
      int(std::max(0.04, 4 * transfer) / std::max(slice_s / kCalibrationSlices, 1e-9));
  std::vector<double> delays(kTransferCpuRepeats);
  for (double &delay : delays)
    BAGUA_TRY(transfer_delay_once(probe, message, slices, slice, &delay));
  p->transfer_cpu_message_s = median(delays) / (double(kTransferCpuRounds) * (n - 1));
  return BAGUA_SUCCESS;
}

// The race (race_candidates): the rows' calls interleave, one of each per
// round, after one warm-up round, in rounds that together last about
// kRaceFillSeconds (kMinRaceRounds .. kMaxRaceRounds of them), so that a
// slow stretch of the machine slows every row alike.
constexpr CallTags kRaceTags{128, 63};
constexpr double kRaceFillSeconds = 0.5;
constexpr int kMinRaceRounds = 3, kMaxRaceRounds = 15;

// Whether a row's calls run flat among all ranks (the rows a race can time).
bool runs_flat(Algorithm algorithm) {
  return algorithm == Algorithm::exact_ring || algorithm == Algorithm::exact_recursive_doubling ||
         algorithm == Algorithm::bytegrad;
}

// The flat schedule of a raced row.
Schedule flat_schedule(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::exact_ring: return Schedule::ring;
    case Algorithm::exact_recursive_doubling: return Schedule::recursive_doubling;
    default: return Schedule::bytegrad;
  }
}

// One call of `row`'s schedule on `call`, started together after a
// barrier: the slowest rank's seconds.
Status timed_call(Probe &probe, const Options &options, const AlgorithmRow &row, const Call &call,
                  Bytes &scratch, double *out) {
  MPI_Barrier(probe.comm());
  const double start = now();
  AlgoContext ctx = probe.call_context(kRaceTags, scratch, options);
  BAGUA_TRY(run_flat(ctx, call, schedule_info(flat_schedule(row.algorithm)), options));
  double elapsed = now() - start;
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, probe.comm());
  *out = elapsed;
  return BAGUA_SUCCESS;
}

// race_rows on the probe's transport.
Status race(Probe &probe, const Options &options, const std::vector<AlgorithmRow> &rows,
            const std::vector<size_t> &candidates, size_t count, int rounds,
            std::vector<double> *out) {
  const std::vector<float> src = gradient_like(count);
  std::vector<float> dst(count);
  const bool any_sign = std::any_of(candidates.begin(), candidates.end(), [&](size_t i) {
    return wire_info(rows[i].wire).error_feedback;
  });
  SignFeedback feedback(probe.comm(), any_sign ? count : 0);  // sign's error feedback
  std::vector<Call> calls;
  for (size_t i : candidates) {
    Call call = float_call(rows[i].wire, count);
    call.src = src.data();
    call.dst = dst.data();
    call.comm = probe.comm();
    call.feedback = &feedback;
    calls.push_back(call);
  }
  Bytes scratch;
  std::vector<std::vector<double>> times(candidates.size());
  // Round 0 warms up; every round calls each candidate once, in turn.
  for (int round = 0; round <= rounds; ++round)
    for (size_t c = 0; c < candidates.size(); ++c) {
      double t = 0;
      BAGUA_TRY(timed_call(probe, options, rows[candidates[c]], calls[c], scratch, &t));
      if (round > 0) times[c].push_back(t);
    }
  out->assign(rows.size(), 0);
  for (size_t c = 0; c < candidates.size(); ++c) (*out)[candidates[c]] = median(times[c]);
  return BAGUA_SUCCESS;
}

// Rank 0's race plan, on every rank: the rows to race (none to skip it)
// and the rounds. Every rank measures the same parameters, so the plans
// agree; broadcasting makes sure that no rank waits in a call the others
// skip.
struct RacePlan {
  std::vector<size_t> rows;
  int rounds = 0;
  double seconds = 0;  // the model's time for the whole race; 0: no candidates
};

RacePlan agreed_race_plan(MPI_Comm comm, const Args &args, const Advice &a) {
  RacePlan plan;
  plan.rows = race_candidates(a);
  double round_s = 0;
  for (size_t i : plan.rows) round_s += a.estimates[i].seconds;
  plan.rounds =
      std::clamp(int(kRaceFillSeconds / std::max(round_s, 1e-9)), kMinRaceRounds, kMaxRaceRounds);
  plan.seconds = (plan.rounds + 1) * round_s;
  if (plan.seconds > args.race_seconds) plan.rows.clear();
  // Rank 0's plan: [rounds, number of rows, rows...].
  std::vector<int> packed = {plan.rounds, int(plan.rows.size())};
  for (size_t i : plan.rows) packed.push_back(int(i));
  packed.resize(2 + algorithm_rows().size());
  MPI_Bcast(packed.data(), int(packed.size()), MPI_INT, 0, comm);
  plan.rounds = packed[0];
  plan.rows.assign(packed.begin() + 2, packed.begin() + 2 + packed[1]);
  return plan;
}

// Races the allreduce rows the model cannot tell apart (race_candidates)
// where their calls fit in args.race_seconds, into m->raced; the notes say
// what ran, or why nothing did.
Status race_close_rows(Probe &probe, const Options &options, const Args &args, Measurement *m) {
  if (args.race_seconds <= 0) {
    m->notes.push_back("race: off (--race-seconds 0)");
    return BAGUA_SUCCESS;
  }
  const Advice a = advise(m->params, args.model_bytes);
  const RacePlan plan = agreed_race_plan(probe.comm(), args, a);
  char note[256];
  if (plan.rows.empty()) {
    if (plan.seconds == 0)
      std::snprintf(note, sizeof note,
                    "race: none (fewer than two allreduce rows predicted within %.0f%% of "
                    "the fastest, or a hierarchical one among them)",
                    100 * kRaceFraction);
    else
      std::snprintf(note, sizeof note,
                    "race: skipped (its calls would take %.1f s, over --race-seconds %.1f)",
                    plan.seconds, args.race_seconds);
    m->notes.push_back(note);
    return BAGUA_SUCCESS;
  }
  BAGUA_TRY(race(probe, options, a.rows, plan.rows, args.model_bytes / 4, plan.rounds, &m->raced));
  std::snprintf(note, sizeof note,
                "race: the allreduce rows predicted within %.0f%% of the fastest, the median of "
                "%d calls each at the model's size, interleaved after one warm-up round",
                100 * kRaceFraction, plan.rounds);
  m->notes.push_back(note);
  return BAGUA_SUCCESS;
}

}  // namespace

Status race_rows(MPI_Comm comm, const std::vector<size_t> &rows, size_t count, int rounds,
                 std::vector<double> *out) {
  for (size_t i : rows)
    if (i >= algorithm_rows().size() || !runs_flat(algorithm_rows()[i].algorithm))
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "race: row %zu is not a flat allreduce row", i);
  if (rows.empty() || count == 0 || rounds < 1)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "race: give at least one row, one element and one round (got %zu, %zu, %d)",
                rows.size(), count, rounds);
  Options options;
  BAGUA_TRY(options_load(&options));
  std::unique_ptr<Probe> probe;
  BAGUA_TRY(Probe::create(comm, options, &probe));
  return race(*probe, options, algorithm_rows(), rows, count, rounds, out);
}

const char *usage() {
  return "usage: mpiexec -n RANKS bagua-advise --model-bytes SIZE [--ranks-per-node K]\n"
         "                                    [--predict-ranks P] [--race-seconds S] [--csv]\n"
         "  SIZE: bytes of float32 gradients, with an optional K, M or G suffix\n";
}

Status parse_args(int argc, const char *const *argv, Args *out) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--csv") {
      a.csv = true;
      continue;
    }
    if (flag != "--model-bytes" && flag != "--ranks-per-node" && flag != "--predict-ranks" &&
        flag != "--race-seconds")
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "unknown option '%s'", argv[i]);
    if (i + 1 >= argc) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s needs a value", argv[i]);
    const char *value = argv[++i];
    if (flag == "--model-bytes") BAGUA_TRY(parse_size("--model-bytes", value, &a.model_bytes));
    if (flag == "--ranks-per-node")
      BAGUA_TRY(parse_count("--ranks-per-node", value, 1, 1 << 20, &a.ranks_per_node));
    if (flag == "--predict-ranks")
      BAGUA_TRY(parse_count("--predict-ranks", value, 2, 1 << 20, &a.predict_ranks));
    if (flag == "--race-seconds")
      BAGUA_TRY(parse_seconds("--race-seconds", value, &a.race_seconds));
  }
  if (a.model_bytes == 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "--model-bytes is required (e.g. --model-bytes 100M)");
  *out = a;
  return BAGUA_SUCCESS;
}

Status measure(MPI_Comm comm, const Args &args, Measurement *out) {
  Options options;
  BAGUA_TRY(options_load(&options));
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (args.ranks_per_node > size)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "--ranks-per-node %d exceeds the %d ranks running",
                args.ranks_per_node, size);
  CpuTicks start;
  const bool have_start = read_cpu_ticks(&start);
  Measurement m;
  CostParams &p = m.params;
  p.ranks = size;
  p.segment_bytes = options.segment_bytes;
  p.codec_block = options.compressed.block(lowprec_wire().id);  // BAGUA_CODEC_BLOCK
  p.ring_threshold_bytes = options.ring_threshold_bytes;
  MPI_Comm node = split_nodes(comm, args, &p.ranks_per_node);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  // Leaders (node rank 0) form the inter-node ring; the node itself the intra one.
  MPI_Comm leaders = MPI_COMM_NULL;
  MPI_Comm_split(comm, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  const int peer_intra = p.ranks_per_node > 1 ? 1 : -1;
  const int peer_inter = p.nodes() > 1 ? p.ranks_per_node : -1;
  if (peer_intra > 0)
    BAGUA_TRY(
        measure_link(comm, peer_intra, node_size > 1 ? node : MPI_COMM_NULL, options, &p.intra));
  if (peer_inter > 0) BAGUA_TRY(measure_link(comm, peer_inter, leaders, options, &p.inter));
  if (peer_intra < 0) p.intra = p.inter;
  if (peer_inter < 0) p.inter = p.intra;
  MPI_Comm host = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  std::unique_ptr<Probe> probe;
  if (size > 1) {
    BAGUA_TRY(Probe::create(comm, options, &probe));
    BAGUA_TRY(measure_alltoall_efficiency(*probe, p, &p.alltoall_efficiency));
    BAGUA_TRY(alltoall_round(*probe, &p.alltoall_round_s));
    BAGUA_TRY(measure_call_checks(*probe, options, &p));
    BAGUA_TRY(measure_transfer_cpu(*probe, &p));
  }
  measure_codecs(comm, host, options, args.model_bytes, &m);
  // Last: the overlap is what the collective hides of the terms above.
  if (probe) BAGUA_TRY(measure_overlap(*probe, options, args.model_bytes, &p));
  // Then the calls themselves decide between the rows the model puts close.
  if (probe) BAGUA_TRY(race_close_rows(*probe, options, args, &m));
  MPI_Comm_free(&host);
  m.notes.push_back("latency: median one-way time of " + std::to_string(kLatencyRounds) +
                    " ping-pongs of 8 bytes from rank 0; bandwidth: 4 MiB (or up to 64 MiB, "
                    "so that a round lasts 25 ms) sent right and received from the left by "
                    "every rank of the ring at once (best of rounds filling 0.2 s, at least 5); "
                    "sustained: the marginal rate of a 4 times longer exchange (rounds up to "
                    "0.15 s), where it is slower");
  m.notes.push_back(
      "all-to-all efficiency: 4 MiB per rank sent to all others at once, against the link "
      "rate; all-to-all round: 16 dependent rounds of 8 bytes to every other rank; call "
      "checks: the library's own (BAGUA_CHECK_CALLS); transfer CPU: what 64 all-to-all "
      "rounds of up to 16 KiB per peer delay compute slices beside them (median of 3), "
      "per message; overlap: the median call of the library's q8 allreduce of the "
      "model's size (at least 4 MiB or a 25 ms transfer, at most 64 MiB or a 0.25 s "
      "call) against the model's time for it without overlap (negative: the time "
      "they add to each other), at q8's balance compute / (compute + transfer); the "
      "second at the balance of the compressed wire furthest on the other side of 0.5 "
      "at that size, if any (else q8's again), interpolated between; messages "
      "through bagua's transport (BAGUA_TRANSPORT, BAGUA_MPI_PIECE_BYTES)");
  if (args.ranks_per_node == 0)
    m.notes.push_back("nodes: ranks sharing memory (MPI_COMM_TYPE_SHARED)");
  note_steal(comm, have_start, start, &m);
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&node);
  *out = m;
  return BAGUA_SUCCESS;
}

Advice advise(const CostParams &params, size_t model_bytes, const std::vector<double> &raced) {
  Advice a;
  a.rows = algorithm_rows();
  a.raced = raced;
  const size_t count = model_bytes / 4;
  for (const AlgorithmRow &row : a.rows) a.estimates.push_back(predict(params, row, count));
  // The library's recommendation among the allreduce rows and among the
  // averaging rows.
  std::vector<size_t> average;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const bool hierarchical_flat =
        a.rows[i].algorithm == Algorithm::hierarchical && params.ranks_per_node <= 1;
    if (hierarchical_flat) continue;  // the same as flat with one rank per node
    (is_averaging(a.rows[i].algorithm) ? average : a.reduce).push_back(i);
  }
  const std::vector<double> predicted = seconds_of(a.estimates);
  a.model_recommended = recommend(a.rows, predicted, a.reduce);
  a.fastest = fastest(predicted, a.reduce);
  a.recommended_averaging = recommend(a.rows, predicted, average);
  std::vector<size_t> raced_rows;
  for (size_t i = 0; i < raced.size(); ++i)
    if (raced[i] > 0) raced_rows.push_back(i);
  a.recommended = raced_rows.empty() ? a.model_recommended : recommend(a.rows, raced, raced_rows);
  return a;
}

std::vector<size_t> race_candidates(const Advice &a) {
  const double limit = (1 + kRaceFraction) * a.estimates[a.fastest].seconds;
  std::vector<size_t> close;
  for (size_t i : a.reduce)
    if (a.estimates[i].seconds <= limit) close.push_back(i);
  const bool all_flat = std::all_of(close.begin(), close.end(),
                                    [&](size_t i) { return runs_flat(a.rows[i].algorithm); });
  if (close.size() < 2 || !all_flat) return {};
  return close;
}

namespace {

void print_table(FILE *out, const Advice &a, const CostParams &p, bool with_formula) {
  std::fprintf(out, "%-24s %12s %14s  %s\n", "algorithm", "ms/step", "bytes/rank",
               with_formula ? "formula" : "");
  for (size_t i = 0; i < a.rows.size(); ++i) {
    if (a.rows[i].algorithm == Algorithm::hierarchical && p.ranks_per_node <= 1) continue;
    const Estimate &e = a.estimates[i];
    std::fprintf(out, "%-24s %12.3f %14zu  %s\n", a.rows[i].name, e.seconds * 1e3, e.bytes_per_rank,
                 with_formula ? e.formula.c_str() : "");
  }
}

void print_link(FILE *out, const char *name, const LinkCost &link) {
  std::fprintf(out, "%s: latency %.1f us, bandwidth %.0f MB/s", name, link.latency_s * 1e6,
               link.bytes_per_s / 1e6);
  if (link.slows_down())
    std::fprintf(out, ", sustained %.0f MB/s beyond %.1f MiB back to back",
                 link.sustained_bytes_per_s / 1e6, link.sustained_after_bytes / (1 << 20));
  std::fprintf(out, "\n");
}

void print_params(FILE *out, const CostParams &p) {
  std::fprintf(out, "ranks %d, ranks per node %d (nodes %d)\n", p.ranks, p.ranks_per_node,
               p.nodes());
  print_link(out, "intra-node", p.intra);
  print_link(out, "inter-node", p.inter);
  std::fprintf(out,
               "all-to-all efficiency %.2f, all-to-all round %.1f us, compute/transfer overlap "
               "%.2f at balance %.2f, %.2f at %.2f, float32 sum %.0f MB/s\n"
               "call check %.1f us per recursive-doubling step (%d steps), with ring "
               "neighbours %.1f us\n"
               "transfer CPU beside compute %.1f us per message\n",
               p.alltoall_efficiency, p.alltoall_round_s * 1e6, p.overlap_at[0].overlap,
               p.overlap_at[0].balance, p.overlap_at[1].overlap, p.overlap_at[1].balance,
               p.reduce_bytes_per_s / 1e6, p.call_check_step_s * 1e6,
               recursive_doubling_steps(p.ranks), p.peer_check_s * 1e6,
               p.transfer_cpu_message_s * 1e6);
  for (const AlgorithmRow &row : algorithm_rows())
    if (row.algorithm == Algorithm::bytegrad)
      std::fprintf(out,
                   "codec %-5s encode %.0f MB/s, decode+accumulate %.0f MB/s, decode %.0f MB/s\n",
                   row.name, p.codec[size_t(row.wire)].encode_bytes_per_s / 1e6,
                   p.codec[size_t(row.wire)].accumulate_bytes_per_s / 1e6,
                   p.codec[size_t(row.wire)].decode_bytes_per_s / 1e6);
}

// The raced rows' measured times, and how the race's recommendation
// compares with the model's.
void print_race(FILE *out, const Advice &a) {
  std::fprintf(out, "raced (calls of the model's size):");
  for (size_t i = 0; i < a.raced.size(); ++i)
    if (a.raced[i] > 0)
      std::fprintf(out, " %s %.3f ms (predicted %.3f);", a.rows[i].name, a.raced[i] * 1e3,
                   a.estimates[i].seconds * 1e3);
  std::fprintf(out, "\n");
  if (a.model_recommended != a.recommended)
    std::fprintf(out, "  (the model alone recommends %s)\n", a.rows[a.model_recommended].name);
}

void print_recommendation(FILE *out, const Advice &a, const CostParams &p, size_t model_bytes) {
  const bool raced = a.raced.size() > a.recommended && a.raced[a.recommended] > 0;
  if (raced) print_race(out, a);
  const Estimate &best = a.estimates[a.recommended];
  std::fprintf(out, "recommended allreduce: %s (%.3f ms per step %s)\n", a.rows[a.recommended].name,
               (raced ? a.raced[a.recommended] : best.seconds) * 1e3,
               raced ? "raced" : "predicted");
  if (!raced && a.fastest != a.recommended)
    std::fprintf(out,
                 "  (%s is predicted at %.3f ms, within %.0f%%: the same speed to the model, "
                 "with more error in the gradients)\n",
                 a.rows[a.fastest].name, a.estimates[a.fastest].seconds * 1e3,
                 100 * kSameSpeedFraction);
  std::fprintf(out, "  formula: %s\n", best.formula.c_str());
  std::fprintf(out, "recommended weight averaging (changes the training algorithm): %s (%.3f ms)\n",
               a.rows[a.recommended_averaging].name,
               a.estimates[a.recommended_averaging].seconds * 1e3);
  const size_t crossover = ring_crossover_bytes(p);
  const bool library_ring = model_bytes >= p.ring_threshold_bytes;
  const bool model_ring = model_bytes >= crossover;
  std::fprintf(out,
               "exact schedule: the library runs %s (BAGUA_RING_THRESHOLD=%zu); the model's "
               "crossover here is %zu bytes%s\n",
               library_ring ? "ring" : "recursive_doubling", p.ring_threshold_bytes, crossover,
               library_ring == model_ring ? "" : ": set BAGUA_RING_THRESHOLD to it");
}

void print_csv(FILE *out, const Advice &a, const CostParams &p, const char *scope) {
  for (size_t i = 0; i < a.rows.size(); ++i) {
    if (a.rows[i].algorithm == Algorithm::hierarchical && p.ranks_per_node <= 1) continue;
    std::fprintf(out, "%s,%d,%s,%.6f,%zu,%s,", scope, p.ranks, a.rows[i].name,
                 a.estimates[i].seconds, a.estimates[i].bytes_per_rank,
                 i == a.recommended ? "recommended" : "");
    if (i < a.raced.size() && a.raced[i] > 0) std::fprintf(out, "%.6f", a.raced[i]);
    std::fprintf(out, "\n");
  }
}

}  // namespace

void print_report(FILE *out, const Args &args, const Measurement &m) {
  const Advice a = advise(m.params, args.model_bytes, m.raced);
  CostParams predicted = m.params;
  predicted.ranks = args.predict_ranks;
  const Advice b = args.predict_ranks > 0 ? advise(predicted, args.model_bytes) : Advice{};
  if (args.csv) {
    std::fprintf(out, "scope,ranks,algorithm,seconds,bytes_per_rank,recommended,raced_seconds\n");
    print_csv(out, a, m.params, "measured");
    if (args.predict_ranks > 0) print_csv(out, b, predicted, "predicted");
    return;
  }
  std::fprintf(out, "bagua-advise: %zu bytes of float32 gradients\n", args.model_bytes);
  print_params(out, m.params);
  for (const std::string &note : m.notes) std::fprintf(out, "  (%s)\n", note.c_str());
  std::fprintf(out,
               "\nper step at %d ranks (alpha-beta per step, codec passes, all-to-all "
               "efficiency; doc/tools.md, bagua-advise):\n",
               m.params.ranks);
  print_table(out, a, m.params, true);
  print_recommendation(out, a, m.params, args.model_bytes);
  if (args.predict_ranks == 0) return;
  std::fprintf(out,
               "\nextrapolated to %d ranks, %d per node (assumes: the same latency, "
               "bandwidth and sustained rate per link and per node interface, the measured "
               "all-to-all efficiency and round, call check per step, overlap, transfer CPU "
               "and codec rates, a non-blocking switch):\n",
               predicted.ranks, predicted.ranks_per_node);
  print_table(out, b, predicted, false);
  print_recommendation(out, b, predicted, args.model_bytes);
}

}  // namespace bagua::advise
