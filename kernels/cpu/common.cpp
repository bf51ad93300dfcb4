// Codec pieces shared by every codec: status names, argument checks, CPU
// feature detection.
#include <cpuid.h>

#include "codec_cpu.h"

namespace bagua::codec {

const char *codec_status_name(CodecStatus s) {
  switch (s) {
    case CodecStatus::ok: return "ok";
    case CodecStatus::corrupt_header: return "corrupt_header";
    case CodecStatus::truncated: return "truncated";
    case CodecStatus::bad_argument: return "bad_argument";
    case CodecStatus::device_error: return "device_error";
  }
  return "?";
}

bool block_size_valid(uint32_t block_elems) { return block_elems_valid(block_elems); }

}  // namespace bagua::codec

namespace bagua::codec::cpu {

namespace {

// F16C from CPUID (not every compiler's __builtin_cpu_supports knows it); the
// OS support for AVX state that it needs is part of the "avx2" check.
bool cpu_has_f16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}

}  // namespace

bool isa_supported(Isa isa) {
  if (isa == Isa::scalar) return true;
  static const bool avx2 =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  return avx2;
}

Isa best_isa() { return isa_supported(Isa::avx2) ? Isa::avx2 : Isa::scalar; }

const char *isa_name(Isa isa) { return isa == Isa::avx2 ? "avx2" : "scalar"; }

CodecStatus check_decode_args(const void *in, size_t in_bytes, size_t expected_bytes, size_t count,
                              const void *dst) {
  if ((count > 0 && dst == nullptr) || (in_bytes > 0 && in == nullptr)) {
    return CodecStatus::bad_argument;
  }
  if (in_bytes < expected_bytes) return CodecStatus::truncated;
  if (in_bytes > expected_bytes) return CodecStatus::bad_argument;
  return CodecStatus::ok;
}

}  // namespace bagua::codec::cpu
