// Compressed allreduce on CUDA device buffers: the result must be bit-for-bit
// the host-buffer result of the same inputs (q8 and fp16; float32, float16,
// bfloat16; sum and average; in place and not; counts around the segment
// and block sizes; one call on a non-default stream). Exits 77 (SKIP) on
// every rank when no GPU is present. Plain main: the skip must happen before
// any test runs.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "bagua.h"
#include "half.h"

namespace {

int failures = 0;

void expect(bool ok, const char *what, int count) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "FAILED: %s (count %d)\n", what, count);
}

bool gpu_on_every_rank() {
  int devices = 0;
  const int mine = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

size_t elem_size(MPI_Datatype t) { return t == MPI_FLOAT ? 4 : 2; }

// Closed-form input of `rank`, element i, as raw bytes of type t.
std::vector<unsigned char> input(MPI_Datatype t, int count, int rank) {
  std::vector<float> f(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) f[size_t(i)] = float((i * 7 + rank * 13) % 97) * 0.25f - 12.0f;
  std::vector<unsigned char> bytes(size_t(count) * elem_size(t));
  for (int i = 0; i < count; ++i) {
    if (t == MPI_FLOAT) {
      std::memcpy(&bytes[size_t(i) * 4], &f[size_t(i)], 4);
    } else {
      const float v = f[size_t(i)];
      const uint16_t h = t == BAGUA_FLOAT16 ? bagua::float_to_fp16(v) : bagua::float_to_bf16(v);
      std::memcpy(&bytes[size_t(i) * 2], &h, 2);
    }
  }
  return bytes;
}

using Call = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

// Runs `call` on host buffers and on device buffers; compares the bytes.
void compare(Call call, const char *name, MPI_Datatype t, MPI_Op op, int count, bool in_place) {
  const int rank = [] {
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }();
  const std::vector<unsigned char> in = input(t, count, rank);
  const size_t bytes = in.size();
  std::vector<unsigned char> host_out(in), device_out(bytes);
  const int host_rc =
      call(in_place ? MPI_IN_PLACE : in.data(), host_out.data(), count, t, op, MPI_COMM_WORLD);
  void *d_in = nullptr, *d_out = nullptr;
  cudaMalloc(&d_in, bytes + 1);
  cudaMalloc(&d_out, bytes + 1);
  cudaMemcpy(in_place ? d_out : d_in, in.data(), bytes, cudaMemcpyHostToDevice);
  const int dev_rc = call(in_place ? MPI_IN_PLACE : d_in, d_out, count, t, op, MPI_COMM_WORLD);
  cudaMemcpy(device_out.data(), d_out, bytes, cudaMemcpyDeviceToHost);
  cudaFree(d_in);
  cudaFree(d_out);
  expect(host_rc == BAGUA_SUCCESS, name, count);
  expect(dev_rc == BAGUA_SUCCESS, bagua_last_error(), count);
  expect(host_out == device_out, name, count);
}

// A device buffer with a host buffer, and device buffers for other calls.
void bad_mixes() {
  float host[4] = {};
  void *dev = nullptr;
  cudaMalloc(&dev, sizeof host);
  expect(bagua_allreduce_q8(host, dev, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
             BAGUA_ERR_INVALID_ARGUMENT,
         "host sendbuf with device recvbuf is rejected", 4);
  expect(std::strstr(bagua_last_error(), "both must be") != nullptr, "mix message", 4);
  expect(bagua_allreduce(dev, host, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
             BAGUA_ERR_INVALID_ARGUMENT,
         "bagua_allreduce rejects device buffers", 4);
  expect(std::strstr(bagua_last_error(), "bagua_allreduce_q8") != nullptr, "device message", 4);
  cudaFree(dev);
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (!gpu_on_every_rank()) {
    std::printf("no GPU: skipped\n");
    MPI_Finalize();
    return 77;
  }
  // Each rank its own device when there are several.
  int devices = 1, rank = 0;
  cudaGetDeviceCount(&devices);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cudaSetDevice(rank % devices);
  // Counts: tiny, odd, several blocks, several 1 MiB segments.
  for (int count : {1, 7, 4097, 100003, 600001})
    for (MPI_Datatype t : {MPI_FLOAT, BAGUA_FLOAT16, BAGUA_BFLOAT16})
      for (MPI_Op op : {MPI_SUM, BAGUA_AVG})
        for (bool in_place : {false, true}) {
          compare(bagua_allreduce_q8, "q8 device == host", t, op, count, in_place);
          compare(bagua_allreduce_fp16, "fp16 device == host", t, op, count, in_place);
        }
  // The same on a stream of the caller's.
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  expect(bagua_set_cuda_stream(MPI_COMM_WORLD, stream) == BAGUA_SUCCESS, "set stream", 0);
  compare(bagua_allreduce_q8, "q8 on a stream", MPI_FLOAT, MPI_SUM, 100003, false);
  bagua_set_cuda_stream(MPI_COMM_WORLD, nullptr);
  cudaStreamDestroy(stream);
  bad_mixes();
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s\n", any ? "FAILED" : "passed");
  MPI_Finalize();
  return any ? 1 : 0;
}
