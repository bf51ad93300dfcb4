// Codec throughput on 64 MiB of float32 (single thread), reported in GB/s of
// float32 input and as a ratio to memcpy of the same size measured in the
// same run. `--error-table [q8|q4]` instead prints q8 (or q4) error and speed per block size
// for normally distributed (gradient-like) data.
#include <benchmark/benchmark.h>
#include <math.h>
#include <string.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codec.h"
#include "cpu/codec_cpu.h"

namespace {

namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;
using bagua::DType;
using cpu::Isa;

constexpr size_t kCount = size_t(16) << 20;  // 64 MiB of float32
constexpr size_t kBytes = kCount * sizeof(float);

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v) x = dist(rng);
  return v;
}

// Buffers shared by all benchmarks, allocated and touched once.
struct Buffers {
  std::vector<float> x = normal(kCount, 1);
  std::vector<float> out = std::vector<float>(kCount, 0.0f);
  std::vector<float> residual = std::vector<float>(kCount, 0.0f);
  std::vector<uint8_t> enc = std::vector<uint8_t>(codec::cast_encoded_bytes(kCount), 0);

  static Buffers &get() {
    static Buffers b;
    return b;
  }
};

Isa isa_arg(const benchmark::State &state) { return state.range(0) ? Isa::avx2 : Isa::scalar; }

uint32_t block_arg(const benchmark::State &state) { return uint32_t(state.range(1)); }

void finish(benchmark::State &state) {
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBytes));
}

void check(benchmark::State &state, codec::CodecStatus s) {
  if (s != codec::CodecStatus::ok) state.SkipWithError(codec::codec_status_name(s));
}

void BM_memcpy(benchmark::State &state) {
  Buffers &b = Buffers::get();
  for (auto _ : state) {
    memcpy(b.out.data(), b.x.data(), kBytes);
    benchmark::ClobberMemory();
  }
  finish(state);
}

void BM_q8_encode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  for (auto _ : state) {
    check(state, cpu::q8_encode(isa_arg(state), b.x.data(), DType::f32, kCount, block_arg(state),
                                b.enc.data()));
  }
  finish(state);
}

void BM_q8_decode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t bytes = codec::q8_encoded_bytes(kCount, block_arg(state));
  codec::q8_encode(b.x.data(), DType::f32, kCount, block_arg(state), b.enc.data());
  for (auto _ : state) {
    check(state, cpu::q8_decode(isa_arg(state), b.enc.data(), bytes, kCount, block_arg(state),
                                b.out.data(), DType::f32));
  }
  finish(state);
}

void BM_q8_decode_accumulate(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t bytes = codec::q8_encoded_bytes(kCount, block_arg(state));
  codec::q8_encode(b.x.data(), DType::f32, kCount, block_arg(state), b.enc.data());
  for (auto _ : state) {
    check(state, cpu::q8_decode_accumulate(isa_arg(state), b.enc.data(), bytes, kCount,
                                           block_arg(state), b.out.data()));
  }
  finish(state);
}

// A min-max codec other than q8 (q4), for its rows and its error table.
struct MinMaxBench {
  double levels;
  size_t (*encoded_bytes)(size_t, uint32_t);
  codec::CodecStatus (*encode)(Isa, const void *, DType, size_t, uint32_t, void *);
  codec::CodecStatus (*decode)(Isa, const void *, size_t, size_t, uint32_t, void *, DType);
  codec::CodecStatus (*decode_accumulate)(Isa, const void *, size_t, size_t, uint32_t, float *);
};
const MinMaxBench kQ4{15, codec::q4_encoded_bytes, cpu::q4_encode, cpu::q4_decode,
                      cpu::q4_decode_accumulate};
const MinMaxBench kQ8{255, codec::q8_encoded_bytes, cpu::q8_encode, cpu::q8_decode,
                      cpu::q8_decode_accumulate};

void BM_minmax_encode(benchmark::State &state, const MinMaxBench &c) {
  Buffers &b = Buffers::get();
  for (auto _ : state) {
    check(state,
          c.encode(isa_arg(state), b.x.data(), DType::f32, kCount, block_arg(state), b.enc.data()));
  }
  finish(state);
}

void BM_minmax_decode(benchmark::State &state, const MinMaxBench &c, bool accumulate) {
  Buffers &b = Buffers::get();
  const size_t bytes = c.encoded_bytes(kCount, block_arg(state));
  c.encode(Isa::scalar, b.x.data(), DType::f32, kCount, block_arg(state), b.enc.data());
  for (auto _ : state) {
    check(state, accumulate ? c.decode_accumulate(isa_arg(state), b.enc.data(), bytes, kCount,
                                                  block_arg(state), b.out.data())
                            : c.decode(isa_arg(state), b.enc.data(), bytes, kCount,
                                       block_arg(state), b.out.data(), DType::f32));
  }
  finish(state);
}

void BM_cast_encode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  for (auto _ : state) {
    check(state, cpu::cast_encode(isa_arg(state), b.x.data(), DType::f32, kCount,
                                  codec::CastFormat::fp16, 0.25f, b.enc.data()));
  }
  finish(state);
}

void BM_cast_decode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  codec::cast_encode(b.x.data(), DType::f32, kCount, codec::CastFormat::fp16, 0.25f, b.enc.data());
  for (auto _ : state) {
    check(state, cpu::cast_decode(isa_arg(state), b.enc.data(), b.enc.size(), kCount, b.out.data(),
                                  DType::f32));
  }
  finish(state);
}

void BM_cast_decode_accumulate(benchmark::State &state) {
  Buffers &b = Buffers::get();
  codec::cast_encode(b.x.data(), DType::f32, kCount, codec::CastFormat::fp16, 0.25f, b.enc.data());
  for (auto _ : state) {
    check(state, cpu::cast_decode_accumulate(isa_arg(state), b.enc.data(), b.enc.size(), kCount,
                                             b.out.data()));
  }
  finish(state);
}

void BM_sign_encode_with_feedback(benchmark::State &state) {
  Buffers &b = Buffers::get();
  for (auto _ : state) {
    check(state, cpu::sign_encode_with_feedback(isa_arg(state), b.x.data(), b.residual.data(),
                                                kCount, block_arg(state), b.enc.data()));
  }
  finish(state);
}

void BM_sign_decode(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t bytes = codec::sign_encoded_bytes(kCount, block_arg(state));
  codec::sign_encode_with_feedback(b.x.data(), nullptr, kCount, block_arg(state), b.enc.data());
  for (auto _ : state) {
    check(state, cpu::sign_decode(isa_arg(state), b.enc.data(), bytes, kCount, block_arg(state),
                                  b.out.data(), DType::f32));
  }
  finish(state);
}

void BM_sign_decode_accumulate(benchmark::State &state) {
  Buffers &b = Buffers::get();
  const size_t bytes = codec::sign_encoded_bytes(kCount, block_arg(state));
  codec::sign_encode_with_feedback(b.x.data(), nullptr, kCount, block_arg(state), b.enc.data());
  for (auto _ : state) {
    check(state, cpu::sign_decode_accumulate(isa_arg(state), b.enc.data(), bytes, kCount,
                                             block_arg(state), b.out.data()));
  }
  finish(state);
}

// Args: {isa (0 scalar, 1 avx2), block elements}.
void codec_args(benchmark::internal::Benchmark *b) {
  b->ArgNames({"avx2", "block"})->Unit(benchmark::kMillisecond)->MinTime(1.0);
  for (int64_t isa : {1, 0}) b->Args({isa, codec::kDefaultQ8Block});
}

void q4_args(benchmark::internal::Benchmark *b) {
  b->ArgNames({"avx2", "block"})->Unit(benchmark::kMillisecond)->MinTime(1.0);
  for (int64_t isa : {1, 0}) b->Args({isa, codec::kDefaultQ4Block});
}

BENCHMARK(BM_memcpy)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_q8_encode)->Apply(codec_args);
BENCHMARK(BM_q8_decode)->Apply(codec_args);
BENCHMARK(BM_q8_decode_accumulate)->Apply(codec_args);
BENCHMARK_CAPTURE(BM_minmax_encode, q4, kQ4)->Apply(q4_args);
BENCHMARK_CAPTURE(BM_minmax_decode, q4, kQ4, false)->Apply(q4_args);
BENCHMARK_CAPTURE(BM_minmax_decode, q4_accumulate, kQ4, true)->Apply(q4_args);
BENCHMARK(BM_cast_encode)->Apply(codec_args);
BENCHMARK(BM_cast_decode)->Apply(codec_args);
BENCHMARK(BM_cast_decode_accumulate)->Apply(codec_args);
BENCHMARK(BM_sign_encode_with_feedback)->Apply(codec_args);
BENCHMARK(BM_sign_decode)->Apply(codec_args);
BENCHMARK(BM_sign_decode_accumulate)->Apply(codec_args);

// Console output plus a closing table of GB/s and the ratio to memcpy.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run> &runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run &run : runs) {
      const auto it = run.counters.find("bytes_per_second");
      if (it != run.counters.end()) rates_.emplace_back(run.benchmark_name(), it->second.value);
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    double memcpy_rate = 0;
    for (const auto &[name, rate] : rates_) {
      if (name.rfind("BM_memcpy", 0) == 0) memcpy_rate = rate;
    }
    std::printf("\n%-64s %8s %10s\n", "benchmark (64 MiB float32 input)", "GB/s", "x memcpy");
    for (const auto &[name, rate] : rates_) {
      std::printf("%-64s %8.2f %10.2f\n", name.c_str(), rate / 1e9,
                  memcpy_rate > 0 ? rate / memcpy_rate : 0.0);
    }
  }

 private:
  std::vector<std::pair<std::string, double>> rates_;
};

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

// q8 error and speed per block size on N(0, 1) data: max |x - x'| / max |x|,
// RMS relative error ||x - x'|| / ||x||, the worst error in units of the
// per-block bound (max - min) / (2 levels), the header overhead, and throughput.
int error_table(const MinMaxBench &c, uint32_t first_block) {
  const Isa isa = cpu::best_isa();
  Buffers &b = Buffers::get();
  std::printf("%7s %9s %12s %12s %10s %9s %9s\n", "block", "overhead", "max_rel_err", "rms_rel_err",
              "err/bound", "enc GB/s", "dacc GB/s");
  for (uint32_t block = first_block; block <= first_block * 64; block *= 2) {
    const size_t bytes = c.encoded_bytes(kCount, block);
    const double enc_s =
        best_time([&] { c.encode(isa, b.x.data(), DType::f32, kCount, block, b.enc.data()); });
    const double acc_s = best_time(
        [&] { c.decode_accumulate(isa, b.enc.data(), bytes, kCount, block, b.out.data()); });
    c.decode(isa, b.enc.data(), bytes, kCount, block, b.out.data(), DType::f32);
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
        worst = std::max(worst, err / ((double(hi) - lo) / (2 * c.levels)));
      }
    }
    std::printf("%7u %8.2f%% %12.3e %12.3e %10.4f %9.2f %9.2f\n", block,
                100.0 * (double(bytes) / (kCount * log2(c.levels + 1) / 8) - 1), max_err / max_abs,
                sqrt(sum_err_sq / sum_sq), worst, kBytes / enc_s / 1e9, kBytes / acc_s / 1e9);
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--error-table") == 0) {
    const bool q4 = argc > 2 && strcmp(argv[2], "q4") == 0;
    return q4 ? error_table(kQ4, 64) : error_table(kQ8, 256);
  }
  std::printf("cpu path: %s\n", cpu::isa_name(cpu::best_isa()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
