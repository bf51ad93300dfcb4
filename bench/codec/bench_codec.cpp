// Codec throughput on 64 MiB of float32 (single thread, memory bound) and,
// for the AVX2 path, on 1 MiB (the segment size the library encodes at a
// time; it stays in cache). Every row reports, besides Google Benchmark's own
// columns (bytes_per_second counts the float32 input), its rate as a fraction
// of memcpy of the same size (x_memcpy) and its memory traffic (bytes read
// plus bytes written) as a fraction of a 64 MiB streaming read+write copy
// (x_stream, the memory's bandwidth); both peers are measured right after the row, in
// CPU time like the row itself, so load on a shared machine affects them
// alike. The standard flags (--benchmark_format=json, --benchmark_out, ...)
// apply; the CPU path and the peers' procedure are in the context block.
// Besides the rows of each kernel by instruction set (q8, the casts, sign),
// every codec wire of the registry has an encode and a decode_accumulate row
// at its default block on the best instruction set (BM_wire_*), so a new
// wire is benchmarked without an edit here. `--error-table [WIRE]` instead
// prints a min-max wire's (default q8) error and speed per block size for
// normally distributed (gradient-like) data.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/wires.hpp"
#include "codec.h"
#include "core/options.hpp"
#include "cpu/codec_cpu.h"

namespace {

namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;
using bagua::DType;
using cpu::Isa;

constexpr size_t kCount = size_t(16) << 20;  // 64 MiB of float32
constexpr size_t kBytes = kCount * sizeof(float);
constexpr int kPeerRuns = 7;  // each peer rate is the median of this many runs

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v) x = dist(rng);
  return v;
}

// Buffers shared by all benchmarks, allocated and touched once (no page
// faults inside the timed loops).
struct Buffers {
  std::vector<float> x = normal(kCount, 1);
  std::vector<float> out = std::vector<float>(kCount, 0.0f);
  std::vector<float> residual = std::vector<float>(kCount, 0.0f);
  std::vector<float> peer = std::vector<float>(kCount, 0.0f);  // the peers' destination
  std::vector<uint8_t> enc = std::vector<uint8_t>(codec::cast_encoded_bytes(kCount), 0);

  static Buffers &get() {
    static Buffers b;
    return b;
  }
};

Isa isa_arg(const benchmark::State &state) { return state.range(0) ? Isa::avx2 : Isa::scalar; }

uint32_t block_arg(const benchmark::State &state) { return uint32_t(state.range(1)); }

// Elements from the argument at `index`, MiB of float32 input: 64 (memory
// bound) or 1 (one BAGUA_SEGMENT_BYTES segment, the size the library encodes
// at a time, which stays in cache across iterations).
size_t count_arg(const benchmark::State &state, int index) {
  return size_t(state.range(index)) << 18;
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Median CPU time of kPeerRuns calls of fn, in seconds.
template <class Fn>
double median_seconds(Fn &&fn) {
  double t[kPeerRuns];
  for (double &ti : t) {
    const double t0 = thread_cpu_seconds();
    fn();
    benchmark::ClobberMemory();
    ti = thread_cpu_seconds() - t0;
  }
  std::nth_element(t, t + kPeerRuns / 2, t + kPeerRuns);
  return t[kPeerRuns / 2];
}

// Copies kBytes with streaming (non-temporal) stores: the read+write bandwidth
// of memory without the read-for-ownership of ordinary stores.
void stream_copy(const float *src, float *dst) {
  for (size_t i = 0; i < kCount; i += 16) {
    for (size_t k = 0; k < 16; k += 4) _mm_stream_ps(dst + i + k, _mm_loadu_ps(src + i + k));
  }
  _mm_sfence();
}

// Runs one row over n elements: body() (a CodecStatus) per iteration, then
// the counters x_memcpy (float32 input rate / the rate of memcpy of the same
// size), traffic (bytes read + written per second) and x_stream (traffic /
// the 64 MiB stream copy's, i.e. memory's), all in CPU time of this thread.
template <class Body>
void run_row(benchmark::State &state, size_t n, size_t traffic_bytes, Body &&body) {
  const double t0 = thread_cpu_seconds();
  for (auto _ : state) {
    const codec::CodecStatus s = body();
    if (s != codec::CodecStatus::ok) state.SkipWithError(codec::codec_status_name(s));
    benchmark::ClobberMemory();
  }
  const double seconds = thread_cpu_seconds() - t0;
  Buffers &b = Buffers::get();
  const double iters = double(state.iterations()), input = double(n * sizeof(float));
  state.SetBytesProcessed(int64_t(iters * input));
  // memcpy of n elements, repeated to copy 64 MiB per timing (short copies
  // alone would time mostly the clock).
  const size_t reps = kCount / n;
  const double memcpy_rate = double(reps) * input / median_seconds([&] {
                               for (size_t k = 0; k < reps; ++k) {
                                 memcpy(b.peer.data(), b.x.data(), n * sizeof(float));
                                 benchmark::ClobberMemory();
                               }
                             });
  const double stream_rate =
      2.0 * double(kBytes) / median_seconds([&] { stream_copy(b.x.data(), b.peer.data()); });
  const double traffic_rate = iters * double(traffic_bytes) / seconds;
  state.counters["x_memcpy"] = iters * input / seconds / memcpy_rate;
  state.counters["traffic"] =
      benchmark::Counter(traffic_rate, benchmark::Counter::kDefaults, benchmark::Counter::kIs1024);
  state.counters["x_stream"] = traffic_rate / stream_rate;
}

void BM_memcpy(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 0), input = n * sizeof(float);
  run_row(state, n, 2 * input, [&] {
    memcpy(b.out.data(), b.x.data(), input);
    return codec::CodecStatus::ok;
  });
}

// The q8 kernels by instruction set, for its rows.
struct MinMaxBench {
  size_t (*encoded_bytes)(size_t, uint32_t);
  codec::CodecStatus (*encode)(Isa, const void *, DType, size_t, uint32_t, void *);
  codec::CodecStatus (*decode)(Isa, const void *, size_t, size_t, uint32_t, void *, DType);
  codec::CodecStatus (*decode_accumulate)(Isa, const void *, size_t, size_t, uint32_t, float *);
};
const MinMaxBench kQ8{codec::q8_encoded_bytes, cpu::q8_encode, cpu::q8_decode,
                      cpu::q8_decode_accumulate};

void BM_minmax_encode(benchmark::State &state, const MinMaxBench &c) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  run_row(state, n, input + c.encoded_bytes(n, block_arg(state)), [&] {
    return c.encode(isa_arg(state), b.x.data(), DType::f32, n, block_arg(state), b.enc.data());
  });
}

// Decodes to float32 or (accumulate) adds into the float32 accumulator,
// which is read as well as written.
void BM_minmax_decode(benchmark::State &state, const MinMaxBench &c, bool accumulate) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  const size_t bytes = c.encoded_bytes(n, block_arg(state));
  c.encode(Isa::scalar, b.x.data(), DType::f32, n, block_arg(state), b.enc.data());
  run_row(state, n, bytes + (accumulate ? 2 : 1) * input, [&] {
    return accumulate ? c.decode_accumulate(isa_arg(state), b.enc.data(), bytes, n,
                                            block_arg(state), b.out.data())
                      : c.decode(isa_arg(state), b.enc.data(), bytes, n, block_arg(state),
                                 b.out.data(), DType::f32);
  });
}

// Args: {isa, wire format (1 fp16, 2 bf16), MiB}.
codec::CastFormat format_arg(const benchmark::State &state) {
  return codec::CastFormat(state.range(1));
}

void BM_cast_encode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  run_row(state, n, input + codec::cast_encoded_bytes(n), [&] {
    return cpu::cast_encode(isa_arg(state), b.x.data(), DType::f32, n, format_arg(state), 0.25f,
                            b.enc.data());
  });
}

void BM_cast_decode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  codec::cast_encode(b.x.data(), DType::f32, n, format_arg(state), 0.25f, b.enc.data());
  run_row(state, n, codec::cast_encoded_bytes(n) + input, [&] {
    return cpu::cast_decode(isa_arg(state), b.enc.data(), codec::cast_encoded_bytes(n), n,
                            b.out.data(), DType::f32);
  });
}

void BM_cast_decode_accumulate(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  codec::cast_encode(b.x.data(), DType::f32, n, format_arg(state), 0.25f, b.enc.data());
  run_row(state, n, codec::cast_encoded_bytes(n) + 2 * input, [&] {
    return cpu::cast_decode_accumulate(isa_arg(state), b.enc.data(), codec::cast_encoded_bytes(n),
                                       n, b.out.data());
  });
}

// Without a residual: reads g, writes the bits.
void BM_sign_encode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  run_row(state, n, input + codec::sign_encoded_bytes(n, block_arg(state)), [&] {
    return cpu::sign_encode_with_feedback(isa_arg(state), b.x.data(), nullptr, n, block_arg(state),
                                          b.enc.data());
  });
}

// Reads g and the residual, writes the bits and the residual.
void BM_sign_encode_with_feedback(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  run_row(state, n, 3 * input + codec::sign_encoded_bytes(n, block_arg(state)), [&] {
    return cpu::sign_encode_with_feedback(isa_arg(state), b.x.data(), b.residual.data(), n,
                                          block_arg(state), b.enc.data());
  });
}

void BM_sign_decode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  const size_t bytes = codec::sign_encoded_bytes(n, block_arg(state));
  codec::sign_encode_with_feedback(b.x.data(), nullptr, n, block_arg(state), b.enc.data());
  run_row(state, n, bytes + input, [&] {
    return cpu::sign_decode(isa_arg(state), b.enc.data(), bytes, n, block_arg(state), b.out.data(),
                            DType::f32);
  });
}

void BM_sign_decode_accumulate(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t n = count_arg(state, 2), input = n * sizeof(float);
  const size_t bytes = codec::sign_encoded_bytes(n, block_arg(state));
  codec::sign_encode_with_feedback(b.x.data(), nullptr, n, block_arg(state), b.enc.data());
  run_row(state, n, bytes + 2 * input, [&] {
    return cpu::sign_decode_accumulate(isa_arg(state), b.enc.data(), bytes, n, block_arg(state),
                                       b.out.data());
  });
}

// Args: {isa (0 scalar, 1 avx2), block elements, MiB}; the in-cache size
// for the AVX2 path only.
void block_args(benchmark::internal::Benchmark *b, int64_t block) {
  b->ArgNames({"avx2", "block", "MiB"})->Unit(benchmark::kMillisecond);
  for (int64_t mib : {64, 1}) b->Args({1, block, mib});
  b->Args({0, block, 64});
}

void codec_args(benchmark::internal::Benchmark *b) { block_args(b, codec::kDefaultQ8Block); }

void cast_args(benchmark::internal::Benchmark *b) {
  b->ArgNames({"avx2", "wire", "MiB"})->Unit(benchmark::kMillisecond);
  for (auto f : {codec::CastFormat::fp16, codec::CastFormat::bf16}) {
    for (int64_t mib : {64, 1}) b->Args({1, int64_t(f), mib});
    b->Args({0, int64_t(f), 64});
  }
}

BENCHMARK(BM_memcpy)->ArgName("MiB")->Arg(64)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_minmax_encode, q8, kQ8)->Apply(codec_args);
BENCHMARK_CAPTURE(BM_minmax_decode, q8, kQ8, false)->Apply(codec_args);
BENCHMARK_CAPTURE(BM_minmax_decode, q8_accumulate, kQ8, true)->Apply(codec_args);
BENCHMARK(BM_cast_encode)->Apply(cast_args);
BENCHMARK(BM_cast_decode)->Apply(cast_args);
BENCHMARK(BM_cast_decode_accumulate)->Apply(cast_args);
BENCHMARK(BM_sign_encode)->Apply(codec_args);
BENCHMARK(BM_sign_encode_with_feedback)->Apply(codec_args);
BENCHMARK(BM_sign_decode)->Apply(codec_args);
BENCHMARK(BM_sign_decode_accumulate)->Apply(codec_args);

// A registry wire's host kernels at its default block (best instruction
// set): encode reads the floats and writes the encoding (with error
// feedback it also reads and writes the residual); decode_accumulate reads
// the encoding and reads and writes the accumulator.
codec::CodecParams default_params(const bagua::WireInfo &w) {
  Buffers &b = Buffers::get();
  return {bagua::CompressedOptions{}.block(w.id), 1,
          w.error_feedback ? b.residual.data() : nullptr};
}

void BM_wire_encode(benchmark::State &state, const bagua::WireInfo *w) {
  Buffers &b = Buffers::get();
  const codec::CodecParams p = default_params(*w);
  const size_t n = count_arg(state, 0), input = n * sizeof(float);
  const size_t feedback = p.residual != nullptr ? 2 * input : 0;
  run_row(state, n, input + w->host->encoded_bytes(n, p.block) + feedback,
          [&] { return w->host->encode(p, b.x.data(), DType::f32, n, b.enc.data()); });
}

void BM_wire_decode_accumulate(benchmark::State &state, const bagua::WireInfo *w) {
  Buffers &b = Buffers::get();
  const codec::CodecParams p = default_params(*w);
  const size_t n = count_arg(state, 0), input = n * sizeof(float);
  const size_t bytes = w->host->encoded_bytes(n, p.block);
  w->host->encode(p, b.x.data(), DType::f32, n, b.enc.data());
  run_row(state, n, bytes + 2 * input,
          [&] { return w->host->decode_accumulate(p, b.enc.data(), bytes, n, b.out.data()); });
}

// The BM_wire_* rows of every codec wire, at 64 and 1 MiB.
void register_wire_rows() {
  for (const bagua::WireInfo &w : bagua::wires()) {
    if (!bagua::is_codec(w.id)) continue;
    const std::string encode = std::string("BM_wire_encode/") + w.name;
    const std::string decode = std::string("BM_wire_decode_accumulate/") + w.name;
    for (auto *row : {benchmark::RegisterBenchmark(encode.c_str(), BM_wire_encode, &w),
                      benchmark::RegisterBenchmark(decode.c_str(), BM_wire_decode_accumulate, &w)})
      row->ArgName("MiB")->Arg(64)->Arg(1)->Unit(benchmark::kMillisecond);
  }
}

// Best-of-five wall time of fn, in seconds.
template <class Fn>
double best_time(Fn &&fn) {
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Payload bits per element of a wire: its encoding of one block of 1 Mi
// elements, whose header is negligible.
double payload_bits(const codec::HostCodecKernels &k) {
  constexpr size_t n = size_t(1) << 20;
  return std::round(8.0 * double(k.encoded_bytes(n, uint32_t(n))) / double(n));
}

// A min-max wire's error and speed at 7 block sizes, doubling from the
// first the codec accepts at or above an eighth of its default, on N(0, 1) data: max |x - x'| / max
// |x|, RMS relative error ||x - x'|| / ||x||, the worst error in units of the per-block bound (max
// - min) / (2 levels), levels = 2^bits - 1, the header overhead, and throughput.
int error_table(const bagua::WireInfo &w) {
  const codec::HostCodecKernels &c = *w.host;
  const double levels = std::exp2(payload_bits(c)) - 1;
  const uint32_t first_block = bagua::CompressedOptions{}.block(w.id) / 8;
  Buffers &b = Buffers::get();
  std::printf("%7s %9s %12s %12s %10s %9s %9s\n", "block", "overhead", "max_rel_err", "rms_rel_err",
              "err/bound", "enc GB/s", "dacc GB/s");
  constexpr int kRows = 7;
  int rows = 0;
  for (uint32_t block = first_block; rows < kRows && block <= first_block * 1024; block *= 2) {
    const codec::CodecParams p{block, 1, nullptr};
    const size_t bytes = c.encoded_bytes(kCount, block);
    // A block size the codec refuses is left out.
    if (c.encode(p, b.x.data(), DType::f32, kCount, b.enc.data()) != codec::CodecStatus::ok)
      continue;
    ++rows;
    const double enc_s =
        best_time([&] { c.encode(p, b.x.data(), DType::f32, kCount, b.enc.data()); });
    const double acc_s =
        best_time([&] { c.decode_accumulate(p, b.enc.data(), bytes, kCount, b.out.data()); });
    c.decode(p, b.enc.data(), bytes, kCount, b.out.data(), DType::f32);
    double max_abs = 0, max_err = 0, sum_sq = 0, sum_err_sq = 0, worst = 0;
    // Per block: the error relative to the half-step bound of that block.
    for (size_t first = 0; first < kCount; first += block) {
      float lo = b.x[first], hi = lo;
      for (size_t i = first; i < first + block; ++i) {
        lo = std::min(lo, b.x[i]);
        hi = std::max(hi, b.x[i]);
      }
      for (size_t i = first; i < first + block; ++i) {
        const double err = fabs(double(b.x[i]) - double(b.out[i]));
        max_abs = std::max(max_abs, fabs(double(b.x[i])));
        max_err = std::max(max_err, err);
        sum_sq += double(b.x[i]) * b.x[i];
        sum_err_sq += err * err;
        worst = std::max(worst, err / ((double(hi) - lo) / (2 * levels)));
      }
    }
    std::printf("%7u %8.2f%% %12.3e %12.3e %10.4f %9.2f %9.2f\n", block,
                100.0 * (double(bytes) / (kCount * log2(levels + 1) / 8) - 1), max_err / max_abs,
                sqrt(sum_err_sq / sum_sq), worst, kBytes / enc_s / 1e9, kBytes / acc_s / 1e9);
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--error-table") == 0) {
    const bagua::WireInfo *w = bagua::wire_named(argc > 2 ? argv[2] : "q8");
    // A min-max wire: a codec with a block setting and no error feedback.
    if (w == nullptr || !bagua::is_codec(w->id) || w->block.setting == nullptr ||
        w->error_feedback) {
      std::fprintf(stderr, "bagua-bench-codec: --error-table takes a min-max wire (q8 ...)\n");
      return 2;
    }
    return error_table(*w);
  }
  register_wire_rows();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("cpu_path", cpu::isa_name(cpu::best_isa()));
  benchmark::AddCustomContext("input", "float32, MiB as in the row name, one thread");
  benchmark::AddCustomContext(
      "peers",
      "x_memcpy: memcpy of the row's size (repeated to 64 MiB per timing); x_stream: traffic / "
      "a 64 MiB streaming-store copy's; each the median CPU time of " +
          std::to_string(kPeerRuns) + " timings right after the row");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
