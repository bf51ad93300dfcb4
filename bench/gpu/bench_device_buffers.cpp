// Collectives on device buffers against the same calls on host buffers, in
// one run (issue #16): per call and size, the mean time of a host-buffer call
// and of a device-buffer call (the slowest rank's), their ratio, the time of
// copying the buffer to the host and back (what staging costs, measured on
// the same device), and whether the device result equals the host result
// bit for bit (the exit status is 1 when a row's is not). q8, fp16 and sign
// run on the device; exact and decentralized averaging are staged.
//   mpirun -np N bagua-bench-device [--mib 1,16,64] [--iters 10] [--warmup 2]
//                                    [--device-ranks D]
// --device-ranks D: only ranks 0 .. D-1 (default all) pass device buffers in
// the device column, the others host buffers: with D = 1, ranks sharing one
// GPU measure the device path of one rank without the others' GPU work
// (several processes on one GPU take turns on it).
// Built on CUDA (exits 77 without a GPU; bench/gpu/device-check.sh runs it)
// and on the emulated test device (test/device/), whose times mean nothing:
// that build only keeps the benchmark runnable (test bench-device).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bagua.h"
#include "mc/device.hpp"
#ifdef BAGUA_BENCH_ON_CUDA
#include <cuda_runtime_api.h>

#include "mc/cuda_device.hpp"
#else
#include "../../test/device/emulated_device.hpp"
#endif

namespace {

struct Settings {
  std::vector<double> mib = {1, 16, 64};
  int iters = 10, warmup = 2;
  int device_ranks = -1;  // -1: every rank
};

bool parse(int argc, char **argv, Settings *s) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--mib") {
      s->mib.clear();
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        s->mib.push_back(std::atof(v.substr(at, comma - at).c_str()));
        at = comma + 1;
      }
    } else if (a == "--iters") {
      s->iters = std::atoi(v.c_str());
    } else if (a == "--warmup") {
      s->warmup = std::atoi(v.c_str());
    } else if (a == "--device-ranks") {
      s->device_ranks = std::atoi(v.c_str());
      if (s->device_ranks < 1) return false;
    } else {
      return false;
    }
  }
  if (argc % 2 == 0 || s->iters < 1 || s->warmup < 0) return false;
  for (double m : s->mib)
    if (!(m > 0)) return false;
  return true;
}

bagua::Device *device = nullptr;
bool every_row_same = true;

// The device under test, the library's active device.
#ifdef BAGUA_BENCH_ON_CUDA
bool pick_device(int rank) {
  int devices = 0;
  const int mine = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 0) return false;
  cudaSetDevice(rank % devices);
  device = bagua::cuda_device();
  return device != nullptr;
}
#else
bool pick_device(int) {
  static bagua_test::EmulatedDevice emulated;
  device = &emulated;
  bagua::set_active_device_for_testing(device);
  return true;
}
#endif

// The slowest rank's mean seconds per call of `call` over `iters` calls.
double timed(const std::function<int()> &call, const Settings &s, bool *ok) {
  for (int i = 0; i < s.warmup; ++i) *ok &= call() == BAGUA_SUCCESS;
  MPI_Barrier(MPI_COMM_WORLD);
  const double begin = MPI_Wtime();
  for (int i = 0; i < s.iters; ++i) *ok &= call() == BAGUA_SUCCESS;
  double mean = (MPI_Wtime() - begin) / s.iters, slowest = 0;
  MPI_Allreduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// A call on (input, output, count); device_column: whether it is the
// device column's call (a rank outside --device-ranks passes host buffers).
using Collective = std::function<int(const void *, void *, int, bool device_column)>;

// One row: the call on host buffers, on device buffers, and the copies.
void row(const char *name, const Collective &call, double mib, const Settings &s, int rank) {
  const int count = int(mib * (1 << 20) / sizeof(float));
  const size_t bytes = size_t(count) * sizeof(float);
  const auto n = static_cast<size_t>(count);
  std::vector<float> in(n), host_out(n), device_out(n);
  for (int i = 0; i < count; ++i) in[size_t(i)] = float((i * 7 + rank * 13) % 97) * 0.25f - 12;
  void *d_in = device->allocate(bytes), *d_out = device->allocate(bytes);
  void *staging = device->allocate_host(bytes);  // page-locked, as the library's
  if (d_in == nullptr || d_out == nullptr || staging == nullptr) {
    std::fprintf(stderr, "bagua-bench-device: out of device memory at %g MiB\n", mib);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  bool ok = true;
  const bool on_device = s.device_ranks < 0 || rank < s.device_ranks;
  const void *column_in = on_device ? d_in : in.data();
  void *column_out = on_device ? d_out : device_out.data();
  // Equal inputs for both sides before the first call of each (sign's
  // states start alike: each row makes its own).
  ok &= call(in.data(), host_out.data(), count, false) == BAGUA_SUCCESS;
  device->copy(d_in, in.data(), bytes, nullptr);
  device->synchronize(nullptr);
  ok &= call(column_in, column_out, count, true) == BAGUA_SUCCESS;
  if (on_device) {
    device->copy(device_out.data(), d_out, bytes, nullptr);
    device->synchronize(nullptr);
  }
  const bool same = std::memcmp(host_out.data(), device_out.data(), bytes) == 0;
  const double host_s =
      timed([&] { return call(in.data(), host_out.data(), count, false); }, s, &ok);
  const double device_s = timed([&] { return call(column_in, column_out, count, true); }, s, &ok);
  const double copies_s = timed(
      [&] {
        device->copy(staging, d_in, bytes, nullptr);
        device->copy(d_out, staging, bytes, nullptr);
        return device->synchronize(nullptr);
      },
      s, &ok);
  int all_same = same && ok ? 1 : 0, everywhere = 0;
  MPI_Allreduce(&all_same, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  every_row_same &= everywhere == 1;
  if (rank == 0)
    std::printf("%-14s %8.2f %10.3f %10.3f %8.2f %10.3f %5s\n", name, mib, host_s * 1e3,
                device_s * 1e3, device_s / host_s, copies_s * 1e3,
                everywhere ? "yes" : (ok ? "no" : "error"));
  device->release(d_in);
  device->release(d_out);
  device->release_host(staging);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Settings s;
  if (!parse(argc, argv, &s)) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: bagua-bench-device [--mib 1,16,64] [--iters N >= 1] [--warmup W] "
                   "[--device-ranks D >= 1]\n");
    MPI_Finalize();
    return 2;
  }
  if (!pick_device(rank)) {
    if (rank == 0) std::printf("no GPU: skipped\n");
    MPI_Finalize();
    return 77;
  }
  if (rank == 0) {
    std::printf("# %d ranks (%d of them on device buffers), device %s, %d timed calls after %d\n",
                size, s.device_ranks < 0 ? size : std::min(s.device_ranks, size), device->name(),
                s.iters, s.warmup);
    std::printf("# warm-up; times in ms (the slowest rank's mean); copies = the buffer to the\n");
    std::printf("# host and back\n");
    std::printf("# %-12s %8s %10s %10s %8s %10s %5s\n", "call", "MiB", "host", "device", "dev/host",
                "copies", "same");
  }
  const MPI_Comm w = MPI_COMM_WORLD;
  for (double mib : s.mib) {
    row(
        "exact",
        [&](const void *a, void *b, int n, bool) {
          return bagua_allreduce(a, b, n, MPI_FLOAT, MPI_SUM, w);
        },
        mib, s, rank);
    row(
        "q8",
        [&](const void *a, void *b, int n, bool) {
          return bagua_allreduce_q8(a, b, n, MPI_FLOAT, MPI_SUM, w);
        },
        mib, s, rank);
    row(
        "fp16",
        [&](const void *a, void *b, int n, bool) {
          return bagua_allreduce_fp16(a, b, n, MPI_FLOAT, BAGUA_AVG, w);
        },
        mib, s, rank);
    // One state per memory type (a state serves one), made for this size.
    const int count = int(mib * (1 << 20) / sizeof(float));
    bagua_sign_state_t host_state = nullptr, device_state = nullptr;
    bagua_sign_state_create(count, w, &host_state);
    bagua_sign_state_create(count, w, &device_state);
    row(
        "sign",
        [&](const void *a, void *b, int n, bool device_column) {
          return bagua_allreduce_sign(a, b, n, MPI_FLOAT, BAGUA_AVG, w,
                                      device_column ? device_state : host_state);
        },
        mib, s, rank);
    bagua_sign_state_destroy(&host_state);
    bagua_sign_state_destroy(&device_state);
    row(
        "decentral_ring",
        [&](const void *a, void *b, int n, bool) {
          return bagua_decentralized_average(a, b, n, MPI_FLOAT, BAGUA_PEER_RING, 0, 1, w);
        },
        mib, s, rank);
  }
  bagua_finalize();
  MPI_Finalize();
  return every_row_same ? 0 : 1;
}
