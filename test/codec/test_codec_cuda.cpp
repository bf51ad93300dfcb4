// CUDA codecs against the CPU reference, bit for bit. Exits 77 (meson: SKIP)
// with "no GPU: skipped" when no CUDA device is usable.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "codec_cuda.h"
#include "helpers.h"

using namespace codec_test;
namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;
namespace gpu = bagua::codec::gpu;

namespace {

// A device buffer holding a copy of host bytes, read back with host().
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    REQUIRE(cudaMalloc(&ptr_, bytes ? bytes : 1) == cudaSuccess);
  }
  template <class T>
  explicit DeviceBuffer(const std::vector<T> &v) : DeviceBuffer(v.size() * sizeof(T)) {
    REQUIRE(cudaMemcpy(ptr_, v.data(), bytes_, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  template <class T = uint8_t>
  std::vector<T> host() const {
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<T> v(bytes_ / sizeof(T));
    REQUIRE(cudaMemcpy(v.data(), ptr_, bytes_, cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
  template <class T = void>
  T *get() const {
    return static_cast<T *>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void *ptr_ = nullptr;
  size_t bytes_;
};

uint32_t status_of(const DeviceBuffer &status) { return status.host<uint32_t>()[0]; }

// Inputs with every kind of block: normal, non-finite, overflowing and tiny
// range, and one rising from overflow_min to FLT_MAX (whose top step the
// decoder saturates).
std::vector<float> mixed_input(size_t n, uint32_t block, float overflow_min) {
  auto x = normal(n, 31);
  x[block + 3] = NAN;
  for (size_t i = 2 * block; i < 3 * block && i < n; ++i) x[i] *= 1e38f;
  for (size_t i = 3 * block; i < 4 * block && i < n; ++i) x[i] *= 1e-35f;
  const float max = std::numeric_limits<float>::max(), min = overflow_min;
  for (size_t i = 4 * block; i < 5 * block && i < n; ++i)
    x[i] = std::min(max, min + (max - min) * (float(i % block) / float(block - 1)));
  return x;
}

// An accumulator whose sums with the large blocks overflow (saturated), and
// with Inf and NaN entries, over [first, first + block).
std::vector<float> accumulator(size_t n, uint32_t seed, size_t first, uint32_t block) {
  auto acc = normal(n, seed);
  const auto extremes = overflow_accumulator(block);
  std::copy(extremes.begin(), extremes.end(), acc.begin() + first);
  return acc;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T> &v) {
  const auto *p = reinterpret_cast<const uint8_t *>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

// A min-max codec (q8, q4) on both sides.
struct MinMaxPair {
  size_t (*payload_bytes)(size_t elems);
  size_t (*encoded_bytes)(size_t, uint32_t);
  CodecStatus (*cpu_encode)(Isa, const void *, DType, size_t, uint32_t, void *);
  CodecStatus (*cpu_decode)(Isa, const void *, size_t, size_t, uint32_t, void *, DType);
  CodecStatus (*cpu_decode_accumulate)(Isa, const void *, size_t, size_t, uint32_t, float *);
  CodecStatus (*gpu_encode)(const void *, DType, size_t, uint32_t, void *, cudaStream_t);
  CodecStatus (*gpu_decode)(const void *, size_t, size_t, uint32_t, void *, DType, uint32_t *,
                            cudaStream_t);
  CodecStatus (*gpu_decode_accumulate)(const void *, size_t, size_t, uint32_t, float *, uint32_t *,
                                       cudaStream_t);
  // With max = FLT_MAX, a block minimum whose rounded top step passes FLT_MAX.
  float overflow_min;
};

const MinMaxPair kQ8{[](size_t n) { return (n + 15) / 16 * 16; },
                     codec::q8_encoded_bytes,
                     cpu::q8_encode,
                     cpu::q8_decode,
                     cpu::q8_decode_accumulate,
                     gpu::q8_encode,
                     gpu::q8_decode,
                     gpu::q8_decode_accumulate,
                     0x1.bdc526p+126f};

const MinMaxPair kQ4{[](size_t n) { return (n + 31) / 32 * 16; },
                     codec::q4_encoded_bytes,
                     cpu::q4_encode,
                     cpu::q4_decode,
                     cpu::q4_decode_accumulate,
                     gpu::q4_encode,
                     gpu::q4_decode,
                     gpu::q4_decode_accumulate,
                     0x1.00016p+120f};

void check_minmax_on_gpu(const MinMaxPair &c, uint32_t block, size_t tail) {
  const size_t n = 5 * block + tail;
  const auto x = mixed_input(n, block, c.overflow_min);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    INFO("dtype " << bagua::dtype_name(t) << " block " << block << " tail " << tail);
    const auto h = to_half(x, t);
    const auto src_bytes = t == DType::f32 ? as_bytes(x) : as_bytes(h);
    Bytes ref(c.encoded_bytes(n, block));
    REQUIRE(c.cpu_encode(Isa::scalar, src_bytes.data(), t, n, block, ref.data()) ==
            CodecStatus::ok);
    DeviceBuffer src(src_bytes), enc(ref.size()), dst(n * bagua::dtype_size(t)), status(4);
    REQUIRE(c.gpu_encode(src.get(), t, n, block, enc.get(), nullptr) == CodecStatus::ok);
    REQUIRE(enc.host() == ref);
    std::vector<uint8_t> want(n * bagua::dtype_size(t));
    REQUIRE(c.cpu_decode(Isa::scalar, ref.data(), ref.size(), n, block, want.data(), t) ==
            CodecStatus::ok);
    REQUIRE(c.gpu_decode(enc.get(), ref.size(), n, block, dst.get(), t, status.get<uint32_t>(),
                         nullptr) == CodecStatus::ok);
    REQUIRE(dst.host() == want);
    REQUIRE(status_of(status) == 0);
  }
  Bytes ref(c.encoded_bytes(n, block));
  REQUIRE(c.cpu_encode(Isa::scalar, x.data(), DType::f32, n, block, ref.data()) == CodecStatus::ok);
  auto acc = accumulator(n, 32, 2 * block, block);
  DeviceBuffer enc(ref), dacc(acc), status(4);
  REQUIRE(c.cpu_decode_accumulate(Isa::scalar, ref.data(), ref.size(), n, block, acc.data()) ==
          CodecStatus::ok);
  REQUIRE(c.gpu_decode_accumulate(enc.get(), ref.size(), n, block, dacc.get<float>(),
                                  status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(same_bits(dacc.host<float>(), acc));
  if (tail == 0) return;
  // A corrupt header (tag) in the short last block: status set, accumulator untouched.
  ref[(n / block) * (16 + c.payload_bytes(block)) + 8] = 0;
  DeviceBuffer bad(ref);
  REQUIRE(c.gpu_decode_accumulate(bad.get(), ref.size(), n, block, dacc.get<float>(),
                                  status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(status_of(status) == uint32_t(CodecStatus::corrupt_header));
  REQUIRE(same_bits(dacc.host<float>(), acc));
}

}  // namespace

TEST_CASE("q8 on the GPU matches the CPU reference", "[cuda][q8]") {
  // 8192: more payload chunks than threads, so some are read twice.
  check_minmax_on_gpu(kQ8, GENERATE(64u, 2048u, 8192u), 37);
}

TEST_CASE("q4 on the GPU matches the CPU reference", "[cuda][q4]") {
  check_minmax_on_gpu(kQ4, GENERATE(64u, 256u, 2048u), GENERATE(0u, 1u, 37u));
}

TEST_CASE("cast on the GPU matches the CPU reference", "[cuda][cast]") {
  const auto f = GENERATE(codec::CastFormat::fp16, codec::CastFormat::bf16);
  const size_t n = 10007;
  const auto x = random_bits(n, 33);
  Bytes ref(codec::cast_encoded_bytes(n));
  REQUIRE(cpu::cast_encode(Isa::scalar, x.data(), DType::f32, n, f, 0.37f, ref.data()) ==
          CodecStatus::ok);
  DeviceBuffer src(x), enc(ref.size()), status(4);
  REQUIRE(gpu::cast_encode(src.get(), DType::f32, n, f, 0.37f, enc.get(), nullptr) ==
          CodecStatus::ok);
  REQUIRE(enc.host() == ref);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    std::vector<uint8_t> want(n * bagua::dtype_size(t));
    REQUIRE(cpu::cast_decode(Isa::scalar, ref.data(), ref.size(), n, want.data(), t) ==
            CodecStatus::ok);
    DeviceBuffer dst(want.size());
    REQUIRE(gpu::cast_decode(enc.get(), ref.size(), n, dst.get(), t, status.get<uint32_t>(),
                             nullptr) == CodecStatus::ok);
    REQUIRE(dst.host() == want);
  }
  auto acc = normal(n, 34);
  DeviceBuffer dacc(acc);
  REQUIRE(cpu::cast_decode_accumulate(Isa::scalar, ref.data(), ref.size(), n, acc.data()) ==
          CodecStatus::ok);
  REQUIRE(gpu::cast_decode_accumulate(enc.get(), ref.size(), n, dacc.get<float>(),
                                      status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(as_bytes(dacc.host<float>()) == as_bytes(acc));
}

TEST_CASE("mxfp8 on the GPU matches the CPU reference", "[cuda][mxfp8]") {
  // Every float class (NaN and Inf blocks too), a short last block.
  const size_t n = 32 * 300 + 7;
  auto x = normal(n, 35);
  const auto bits = random_bits(n / 8, 36);
  std::copy(bits.begin(), bits.end(), x.begin() + n / 2);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    INFO("dtype " << bagua::dtype_name(t));
    const auto h = to_half(x, t);
    const auto src_bytes = t == DType::f32 ? as_bytes(x) : as_bytes(h);
    Bytes ref(codec::mxfp8_encoded_bytes(n));
    REQUIRE(codec::mxfp8_encode(src_bytes.data(), t, n, ref.data()) == CodecStatus::ok);
    DeviceBuffer src(src_bytes), enc(ref.size()), dst(n * bagua::dtype_size(t)), status(4);
    REQUIRE(gpu::mxfp8_encode(src.get(), t, n, enc.get(), nullptr) == CodecStatus::ok);
    REQUIRE(enc.host() == ref);
    std::vector<uint8_t> want(n * bagua::dtype_size(t));
    REQUIRE(codec::mxfp8_decode(ref.data(), ref.size(), n, want.data(), t) == CodecStatus::ok);
    REQUIRE(gpu::mxfp8_decode(enc.get(), ref.size(), n, dst.get(), t, status.get<uint32_t>(),
                              nullptr) == CodecStatus::ok);
    REQUIRE(dst.host() == want);
    REQUIRE(status_of(status) == 0);
  }
  Bytes ref(codec::mxfp8_encoded_bytes(n));
  REQUIRE(codec::mxfp8_encode(x.data(), DType::f32, n, ref.data()) == CodecStatus::ok);
  auto acc = normal(n, 37);
  DeviceBuffer enc(ref), dacc(acc), status(4);
  REQUIRE(codec::mxfp8_decode_accumulate(ref.data(), ref.size(), n, acc.data()) == CodecStatus::ok);
  REQUIRE(gpu::mxfp8_decode_accumulate(enc.get(), ref.size(), n, dacc.get<float>(),
                                       status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(as_bytes(dacc.host<float>()) == as_bytes(acc));
  ref[0] = 0;  // the tag: status set, accumulator untouched
  DeviceBuffer bad(ref);
  REQUIRE(gpu::mxfp8_decode_accumulate(bad.get(), ref.size(), n, dacc.get<float>(),
                                       status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(status_of(status) == uint32_t(CodecStatus::corrupt_header));
  REQUIRE(as_bytes(dacc.host<float>()) == as_bytes(acc));
}

TEST_CASE("sign on the GPU matches the CPU reference", "[cuda][sign]") {
  // 4096: past the blocks whose elements stay in registers.
  const uint32_t block = GENERATE(64u, 2048u, 4096u);
  const size_t n = 4 * block + 45;
  auto g = normal(n, 35);
  g[2 * block + 1] = NAN;
  auto residual = normal(n, 36);
  // Block 0: g + residual overflows in some lanes (saturated), not in others.
  const float big = 0.75f * std::numeric_limits<float>::max();
  for (size_t i = 0; i < block; ++i) {
    g[i] = i % 2 ? big : -big;
    residual[i] = i % 3 ? big : -big;
  }
  DeviceBuffer dg(g), dres(residual), enc(codec::sign_encoded_bytes(n, block)), status(4);
  Bytes ref(enc.bytes());
  REQUIRE(cpu::sign_encode_with_feedback(Isa::scalar, g.data(), residual.data(), n, block,
                                         ref.data()) == CodecStatus::ok);
  REQUIRE(gpu::sign_encode_with_feedback(dg.get<float>(), dres.get<float>(), n, block, enc.get(),
                                         nullptr) == CodecStatus::ok);
  REQUIRE(enc.host() == ref);
  REQUIRE(as_bytes(dres.host<float>()) == as_bytes(residual));
  std::vector<uint16_t> want(n);
  REQUIRE(cpu::sign_decode(Isa::scalar, ref.data(), ref.size(), n, block, want.data(),
                           DType::bf16) == CodecStatus::ok);
  DeviceBuffer dst(n * 2);
  REQUIRE(gpu::sign_decode(enc.get(), ref.size(), n, block, dst.get(), DType::bf16,
                           status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(dst.host<uint16_t>() == want);
  auto acc = accumulator(n, 37, 0, block);
  DeviceBuffer dacc(acc);
  REQUIRE(cpu::sign_decode_accumulate(Isa::scalar, ref.data(), ref.size(), n, block, acc.data()) ==
          CodecStatus::ok);
  REQUIRE(gpu::sign_decode_accumulate(enc.get(), ref.size(), n, block, dacc.get<float>(),
                                      status.get<uint32_t>(), nullptr) == CodecStatus::ok);
  REQUIRE(as_bytes(dacc.host<float>()) == as_bytes(acc));
}

int main(int argc, char **argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no GPU: skipped\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
