// libFuzzer target for the codec decoders: arbitrary bytes must either be
// rejected with a status or decoded, never read or written out of bounds.
// Each input goes through the CPU kernels (scalar and AVX2) and through the
// codec adapters the compressed allreduce decodes peers' segments with
// (lib/algo/compressed_codecs.cpp: headers, counts and block sizes as a peer
// could send them). Build and run: test/codec/run_fuzz.sh (clang++
// -fsanitize=fuzzer,address); bin/bagua-test runs it for 60 s on the corpus
// in test/codec/fuzz_corpus/.
//
// Input layout: [codec (q8, cast, sign, q4, mxfp8), dtype, flags, block shift, count lo, count hi,
// bytes...]. With flags bit 1 set the count is derived from the number of remaining bytes so the
// length check passes and the headers themselves get fuzzed.
#include <stdint.h>
#include <string.h>

#include <vector>

#include "codec.h"
#include "cpu/codec_cpu.h"
#include "lib/algo/compressed.hpp"

namespace {

namespace codec = bagua::codec;
namespace cpu = bagua::codec::cpu;
using bagua::DType;
using cpu::Isa;

constexpr size_t kPrefix = 6;

size_t encoded_bytes(int which, size_t count, uint32_t block) {
  switch (which) {
    case 0: return codec::q8_encoded_bytes(count, block);
    case 1: return codec::cast_encoded_bytes(count);
    case 2: return codec::sign_encoded_bytes(count, block);
    case 3: return codec::q4_encoded_bytes(count, block);
    default: return codec::mxfp8_encoded_bytes(count);
  }
}

// The largest count whose encoded size fits in `bytes` (sizes grow with count).
size_t count_for(int which, size_t bytes, uint32_t block) {
  size_t lo = 0, hi = bytes * 8 + 1;
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (encoded_bytes(which, mid, block) <= bytes ? lo : hi) = mid;
  }
  return lo;
}

void decode_all(int which, Isa isa, const std::vector<uint8_t> &in, size_t count, uint32_t block,
                DType t) {
  // Exact-size buffers, so AddressSanitizer sees any overrun.
  std::vector<uint8_t> dst(count * bagua::dtype_size(t));
  std::vector<float> acc(count);
  const void *p = in.data();
  switch (which) {
    case 0:
      cpu::q8_decode(isa, p, in.size(), count, block, dst.data(), t);
      cpu::q8_decode_accumulate(isa, p, in.size(), count, block, acc.data());
      break;
    case 1:
      cpu::cast_decode(isa, p, in.size(), count, dst.data(), t);
      cpu::cast_decode_accumulate(isa, p, in.size(), count, acc.data());
      break;
    case 2:
      cpu::sign_decode(isa, p, in.size(), count, block, dst.data(), t);
      cpu::sign_decode_accumulate(isa, p, in.size(), count, block, acc.data());
      break;
    case 3:
      cpu::q4_decode(isa, p, in.size(), count, block, dst.data(), t);
      cpu::q4_decode_accumulate(isa, p, in.size(), count, block, acc.data());
      break;
    default:  // one portable path
      codec::mxfp8_decode(p, in.size(), count, dst.data(), t);
      codec::mxfp8_decode_accumulate(p, in.size(), count, acc.data());
  }
}

// The library's host adapter of each `which`, from the wire registry.
std::unique_ptr<bagua::ChunkCodec> make_adapter(int which, uint32_t block) {
  static const char *const kWires[] = {"q8", "fp16", "sign", "q4", "mxfp8"};
  return bagua::make_host_codec(*bagua::wire_named(kWires[which]), {block});
}

// The adapter's decoders, as the compressed allreduce calls them on a
// received segment of `in.size()` bytes said to hold `count` elements.
void decode_through_adapter(int which, const std::vector<uint8_t> &in, size_t count, uint32_t block,
                            DType t) {
  const auto adapter = make_adapter(which, block);
  std::vector<uint8_t> dst(count * bagua::dtype_size(t));
  adapter->decode(in.data(), in.size(), count, dst.data(), t);
  adapter->decode_accumulate(in.data(), in.size(), count, adapter->accumulator(count));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < kPrefix) return 0;
  const int which = data[0] % 5;  // q8, cast, sign, q4, mxfp8
  const DType t = DType(data[1] % 4);
  const bool exact = data[2] & 1;
  const uint32_t block = 32u << (data[3] % 8);  // 32 (invalid) .. 4096
  size_t count = size_t(data[4]) | size_t(data[5]) << 8;
  std::vector<uint8_t> in(data + kPrefix, data + size);
  if (exact) {
    count = count_for(which, in.size(), block);
    in.resize(encoded_bytes(which, count, block));
  }
  decode_all(which, Isa::scalar, in, count, block, t);
  if (cpu::isa_supported(Isa::avx2)) decode_all(which, Isa::avx2, in, count, block, t);
  decode_through_adapter(which, in, count, block, t);
  return 0;
}
