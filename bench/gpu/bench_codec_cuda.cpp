// CUDA codec kernels against the device's own copy rate: each kernel's
// traffic (bytes read + written) over its time, as a fraction of a
// device-to-device cudaMemcpy measured in the same run and of the nominal HBM
// bandwidth (--hbm-gbs, default 4800 for an H200), for every codec wire of the
// registry at its default block. Issue #16's goal: >= 0.7x
// HBM for encode and decode_accumulate at 256 MiB.
//   bagua-bench-codec-cuda [--mib 256] [--iters 20] [--hbm-gbs 4800]
// Exits 77 ("no GPU: skipped") when no CUDA device is usable.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "base/wires.hpp"
#include "codec_cuda.h"
#include "core/options.hpp"

namespace codec = bagua::codec;
namespace gpu = bagua::codec::gpu;
using bagua::DType;

namespace {

struct Settings {
  size_t mib = 256;
  int iters = 20;
  double hbm_gbs = 4800;
};

bool parse(int argc, char **argv, Settings *s) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char *v = argv[++i];
    if (a == "--mib")
      s->mib = std::strtoull(v, nullptr, 10);
    else if (a == "--iters")
      s->iters = std::atoi(v);
    else if (a == "--hbm-gbs")
      s->hbm_gbs = std::atof(v);
    else
      return false;
  }
  return s->mib > 0 && s->iters > 0 && s->hbm_gbs > 0;
}

void check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "bagua-bench-codec-cuda: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// Mean milliseconds of `launch` over `iters` runs after one warm-up.
double time_ms(int iters, const std::function<void()> &launch) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  launch();
  check(cudaEventRecord(start), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) launch();
  check(cudaEventRecord(stop), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iters;
}

void row(const char *name, size_t traffic, double ms, double copy_gbs, double hbm_gbs) {
  const double gbs = double(traffic) / (ms * 1e6);
  std::printf("%-28s %10.1f %9.3f %9.0f %8.2f %8.2f\n", name, double(traffic) / (1 << 20), ms, gbs,
              gbs / copy_gbs, gbs / hbm_gbs);
}

// n floats uniform in [-1, 1) from a 32-bit LCG, copied to device memory at p.
void fill_uniform(void *p, size_t n, uint32_t seed) {
  std::vector<float> host(n);
  for (float &x : host) {
    seed = seed * 1664525u + 1013904223u;
    x = float(seed >> 8) * 0x1p-23f - 1.0f;
  }
  check(cudaMemcpy(p, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
}

void expect_ok(codec::CodecStatus s, const char *what) {
  if (s == codec::CodecStatus::ok) return;
  std::fprintf(stderr, "bagua-bench-codec-cuda: %s failed (status %d)\n", what, int(s));
  std::exit(1);
}

}  // namespace

int main(int argc, char **argv) {
  Settings s;
  if (!parse(argc, argv, &s)) {
    std::fprintf(stderr, "usage: %s [--mib N] [--iters N] [--hbm-gbs GB/s]\n", argv[0]);
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("no GPU: skipped");
    return 77;
  }
  const size_t count = s.mib << 18;  // float32 elements in s.mib MiB
  const size_t bytes = count * sizeof(float);
  void *src, *copy, *encoded;
  float *acc;
  uint32_t *status;
  check(cudaMalloc(&src, bytes), "cudaMalloc");
  check(cudaMalloc(&copy, bytes), "cudaMalloc");
  check(cudaMalloc(&encoded, bytes), "cudaMalloc");  // the largest encoding fits
  check(cudaMalloc(reinterpret_cast<void **>(&acc), bytes), "cudaMalloc");
  check(cudaMalloc(reinterpret_cast<void **>(&status), sizeof(uint32_t)), "cudaMalloc");
  // Varied finite inputs (constant blocks would make min-max trivial).
  fill_uniform(src, count, 1);
  fill_uniform(acc, count, 2);

  // The peer: a device-to-device copy reads and writes every byte once.
  const double copy_ms =
      time_ms(s.iters, [&] { cudaMemcpyAsync(copy, src, bytes, cudaMemcpyDeviceToDevice); });
  const double copy_gbs = 2.0 * double(bytes) / (copy_ms * 1e6);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("# device %s, %zu MiB float32, %d iterations, nominal HBM %.0f GB/s\n", prop.name,
              s.mib, s.iters, s.hbm_gbs);
  std::printf("%-28s %10s %9s %9s %8s %8s\n", "kernel", "traffic_MiB", "ms", "GB/s", "x_d2d",
              "x_hbm");
  row("memcpy device-to-device", 2 * bytes, copy_ms, copy_gbs, s.hbm_gbs);

  // Every codec wire of the registry at its default block: encode reads the
  // floats and writes the encoding (with error feedback it also reads and
  // writes the residual); decode_accumulate reads the encoding and reads and
  // writes the floats.
  const bagua::CompressedOptions defaults;
  float *residual = static_cast<float *>(copy);
  for (const bagua::WireInfo &w : bagua::wires()) {
    if (!bagua::is_codec(w.id)) continue;
    const gpu::DeviceCodecKernels *k = gpu::find_device_kernels(w.name);
    if (k == nullptr) continue;
    if (w.error_feedback) check(cudaMemset(residual, 0, bytes), "cudaMemset");
    const codec::CodecParams p{defaults.block(w.id), 1, w.error_feedback ? residual : nullptr};
    const size_t n = w.host->encoded_bytes(count, p.block);
    const size_t feedback = w.error_feedback ? 2 * bytes : 0;
    const std::string name = w.name;
    expect_ok(k->encode(p, src, DType::f32, count, encoded, nullptr), w.name);
    row((name + " encode").c_str(), bytes + n + feedback,
        time_ms(s.iters, [&] { k->encode(p, src, DType::f32, count, encoded, nullptr); }), copy_gbs,
        s.hbm_gbs);
    row((name + " decode_accumulate").c_str(), n + 2 * bytes,
        time_ms(s.iters, [&] { k->decode_accumulate(p, encoded, n, count, acc, status, nullptr); }),
        copy_gbs, s.hbm_gbs);
  }
  check(cudaDeviceSynchronize(), "kernels");
  uint32_t device_status = 0;
  check(cudaMemcpy(&device_status, status, sizeof device_status, cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  if (device_status != 0) {
    std::fprintf(stderr, "bagua-bench-codec-cuda: a decoder reported status %u\n", device_status);
    return 1;
  }
  for (void *p : {src, copy, encoded, static_cast<void *>(acc), static_cast<void *>(status)})
    cudaFree(p);
  return 0;
}
