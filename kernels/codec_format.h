// Wire formats of the compression codecs, defined once for CPU and CUDA code.
// See doc/codecs.md for byte layouts and error bounds. Multi-byte fields are
// little-endian (x86-64, aarch64 and NVIDIA GPUs all are). Everything the
// encoders compute per block or per element lives here, so the CPU and CUDA
// twins produce the same bytes by construction.
#ifndef BAGUA_KERNELS_CODEC_FORMAT_H
#define BAGUA_KERNELS_CODEC_FORMAT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "half.h"

namespace bagua::codec {

// Block sizes (elements per block) are powers of two in this range.
constexpr uint32_t kMinBlockElems = 64;
constexpr uint32_t kMaxBlockElems = 1u << 20;

// First byte of the tag field of every header: which codec wrote it.
constexpr uint8_t kTagQ8 = 0x51;    // 'Q'
constexpr uint8_t kTagQ4 = 0x34;    // '4'
constexpr uint8_t kTagSign = 0x53;  // 'S'
constexpr uint8_t kTagCast = 0x43;  // 'C'

// Header flag: the block held NaN or Inf; it decodes to NaN as a whole.
constexpr uint8_t kFlagNonFinite = 0x01;
constexpr uint8_t kKnownFlags = kFlagNonFinite;

constexpr uint32_t kCanonicalNanBits = 0x7fc00000u;

BAGUA_HD float canonical_nan() { return bits_float(kCanonicalNanBits); }

BAGUA_HD bool is_finite(float f) { return (float_bits(f) & 0x7f800000u) != 0x7f800000u; }

// Every NaN the codecs compute leaves them as the canonical NaN: x86 passes a
// NaN operand's sign and payload through arithmetic, NVIDIA GPUs return
// 0x7fffffff, so only a fixed NaN keeps the CPU and CUDA outputs (and the
// cast wire) bit-identical.
BAGUA_HD float canonical(float x) { return x != x ? canonical_nan() : x; }

// Finite overflow saturates: the codecs' arithmetic on finite values never
// leaves the float range, so only non-finite inputs raise kFlagNonFinite.
constexpr float kFloatMax = 3.40282347e+38f;

BAGUA_HD float saturate(float x) {
  return x > kFloatMax ? kFloatMax : x < -kFloatMax ? -kFloatMax : x;
}

// a + b, saturated at +-kFloatMax when both are finite; a non-finite operand
// gives the float sum (Inf stays Inf, a NaN sum is the canonical NaN).
BAGUA_HD float saturating_add(float a, float b) {
  const float s = a + b;
  return is_finite(a) && is_finite(b) ? saturate(s) : canonical(s);
}

BAGUA_HD bool block_elems_valid(uint32_t b) {
  return b >= kMinBlockElems && b <= kMaxBlockElems && (b & (b - 1)) == 0;
}

BAGUA_HD size_t round_up(size_t n, size_t align) { return (n + align - 1) / align * align; }

// ---------------------------------------------------------------------------
// Min-max quantization (q8 and q4): per block a 16-byte header, then the
// quantized elements (q8: one uint8 each; q4: two per byte, element 2k in the
// low nibble of byte k), the payload padded with zeros to a multiple of 16
// bytes. Block i starts at i * (16 + payload of block_elems); only the last
// block may be shorter. The codecs differ only in the tag and the number of
// quantization steps (255 or 15).

struct MinMaxBlockHeader {
  float min;          // smallest element (-0 stored as +0); NaN if non-finite
  float max;          // largest element; NaN if non-finite
  uint8_t tag;        // kTagQ8 or kTagQ4
  uint8_t flags;      // kFlagNonFinite or 0
  uint16_t reserved;  // 0
  uint32_t elems;     // elements in this block
};
static_assert(sizeof(MinMaxBlockHeader) == 16, "min-max header is 16 bytes");

constexpr float kQ8Levels = 255.0f;
constexpr float kQ4Levels = 15.0f;

BAGUA_HD size_t q8_block_bytes(uint32_t elems) {
  return sizeof(MinMaxBlockHeader) + round_up(elems, 16);
}

BAGUA_HD size_t q4_block_bytes(uint32_t elems) {
  return sizeof(MinMaxBlockHeader) + round_up(elems, 32) / 2;
}

// Ranges below this (or overflowing float) are quantized in double precision.
constexpr float kMinMaxNarrowRange = 7.88860905e-31f;  // 2^-100

// Per-block quantization constants derived from the header's min and max.
struct MinMaxParams {
  float min;
  float levels;  // largest quantized value: 255 (q8) or 15 (q4)
  float scale;   // levels / (max - min), 0 for a constant block
  float step;    // (max - min) / levels
  bool wide;     // range overflows float or is tiny: use the double formulas
  double wide_scale;
  double wide_step;
};

BAGUA_HD MinMaxParams minmax_params(float mn, float mx, float levels) {
  MinMaxParams p{};
  p.min = mn;
  p.levels = levels;
  const float range = mx - mn;
  p.wide = range != 0.0f && !(range >= kMinMaxNarrowRange && is_finite(range));
  if (p.wide) {
    const double wide_range = double(mx) - double(mn);
    p.wide_scale = double(levels) / wide_range;
    p.wide_step = wide_range / double(levels);
  } else if (range != 0.0f) {
    p.scale = levels / range;
    p.step = range / levels;
  }
  return p;
}

// A rounded level t saturated to [0, levels], as a payload value.
BAGUA_HD uint8_t minmax_saturate_level(const MinMaxParams &p, float t) {
  return uint8_t(t <= 0.0f ? 0.0f : t >= p.levels ? p.levels : t);
}

// minmax_quantize of a block that is not wide (p.wide false): a loop over
// such a block calls it directly and branches on p.wide once, not per
// element. A subtraction then a product, so FMA contraction cannot change it.
BAGUA_HD uint8_t minmax_quantize_narrow(const MinMaxParams &p, float x) {
  return minmax_saturate_level(p, rintf((x - p.min) * p.scale));
}

// q = round_half_even((x - min) * scale), saturated to [0, levels].
BAGUA_HD uint8_t minmax_quantize(const MinMaxParams &p, float x) {
  if (!p.wide) return minmax_quantize_narrow(p, x);
  return minmax_saturate_level(p, float(rint((double(x) - double(p.min)) * p.wide_scale)));
}

// x' = min + q * step with a single rounding (fma), saturated: with max near
// FLT_MAX the rounded step can carry q = levels past it.
BAGUA_HD float minmax_dequantize(const MinMaxParams &p, uint8_t q) {
  return saturate(p.wide ? float(fma(double(q), p.wide_step, double(p.min)))
                         : fmaf(float(q), p.step, p.min));
}

// q4 payload bytes: the low nibble holds the even element, the high the odd.
BAGUA_HD uint8_t q4_pack(uint8_t even, uint8_t odd) { return uint8_t(even | (odd << 4)); }
BAGUA_HD uint8_t q4_nibble(const uint8_t *payload, uint32_t i) {
  return (payload[i / 2] >> (4 * (i % 2))) & 0x0f;
}

BAGUA_HD bool minmax_header_valid(const MinMaxBlockHeader &h, uint32_t elems, uint8_t tag) {
  if (h.tag != tag || h.reserved != 0 || h.elems != elems || (h.flags & ~kKnownFlags)) {
    return false;
  }
  if (h.flags & kFlagNonFinite) {
    return float_bits(h.min) == kCanonicalNanBits && float_bits(h.max) == kCanonicalNanBits;
  }
  return is_finite(h.min) && is_finite(h.max) && h.min <= h.max;
}

BAGUA_HD MinMaxBlockHeader minmax_make_header(float mn, float mx, bool non_finite, uint32_t elems,
                                              uint8_t tag) {
  MinMaxBlockHeader h{};
  h.min = non_finite ? canonical_nan() : mn + 0.0f;  // + 0 turns -0 into +0
  h.max = non_finite ? canonical_nan() : mx + 0.0f;
  h.tag = tag;
  h.flags = non_finite ? kFlagNonFinite : 0;
  h.elems = elems;
  return h;
}

// ---------------------------------------------------------------------------
// 1-bit sign: per block an 8-byte header with scale = mean |x|, then one bit
// per element (bit i of byte k is element 8k + i; 1 = negative), the payload
// padded with zero bits to a multiple of 8 bytes. x' = bit ? -scale : scale.

struct SignBlockHeader {
  float scale;        // mean |x| of the block, >= +0; NaN if non-finite
  uint8_t tag;        // kTagSign
  uint8_t flags;      // kFlagNonFinite or 0
  uint16_t reserved;  // 0
};
static_assert(sizeof(SignBlockHeader) == 8, "sign header is 8 bytes");

BAGUA_HD size_t sign_block_bytes(uint32_t elems) {
  return sizeof(SignBlockHeader) + round_up(elems, 64) / 8;
}

// mean |x| is summed in double over kSignLanes strided lanes (lane j adds
// elements j, j + 32, ... in order), then the lanes are combined by halving
// (lane j += lane j + 16, then + 8, + 4, + 2, + 1). Every implementation uses
// this order, so the scale is bit-identical on CPU (scalar, AVX2) and GPU.
constexpr uint32_t kSignLanes = 32;

BAGUA_HD bool sign_bit(float x) { return (float_bits(x) >> 31) != 0; }

BAGUA_HD float sign_value(float scale, bool negative) { return negative ? -scale : scale; }

BAGUA_HD bool sign_header_valid(const SignBlockHeader &h) {
  if (h.tag != kTagSign || h.reserved != 0 || (h.flags & ~kKnownFlags)) return false;
  if (h.flags & kFlagNonFinite) return float_bits(h.scale) == kCanonicalNanBits;
  return is_finite(h.scale) && !sign_bit(h.scale);
}

// Builds the header from the lane total; a non-finite total means NaN or Inf
// was in the block (a double sum of at most 2^20 floats cannot overflow).
BAGUA_HD SignBlockHeader sign_make_header(double abs_sum, uint32_t elems) {
  SignBlockHeader h{};
  const bool non_finite = !(fabs(abs_sum) <= 1.7976931348623157e308);
  h.scale = non_finite ? canonical_nan() : float(abs_sum / double(elems));
  h.tag = kTagSign;
  h.flags = non_finite ? kFlagNonFinite : 0;
  return h;
}

// ---------------------------------------------------------------------------
// Cast: a 16-byte header, then one float16 or bfloat16 per element (of
// x * prescale; every NaN as the canonical one), padded with zeros to a
// multiple of 16 bytes. Decode: x' = h * (1 / prescale); decode_accumulate:
// acc = fma(h, 1/prescale, acc); a NaN result is the canonical NaN.

enum class CastFormat : uint8_t { fp16 = 1, bf16 = 2 };

struct CastHeader {
  uint8_t tag;        // kTagCast
  uint8_t format;     // CastFormat
  uint16_t reserved;  // 0
  float prescale;     // positive, normal, finite
  uint64_t count;     // elements
};
static_assert(sizeof(CastHeader) == 16, "cast header is 16 bytes");

constexpr float kFloatMinNormal = 1.17549435e-38f;

BAGUA_HD bool cast_prescale_valid(float s) { return is_finite(s) && s >= kFloatMinNormal; }

BAGUA_HD bool cast_format_valid(uint8_t f) {
  return f == uint8_t(CastFormat::fp16) || f == uint8_t(CastFormat::bf16);
}

BAGUA_HD bool cast_header_valid(const CastHeader &h, uint64_t count) {
  return h.tag == kTagCast && cast_format_valid(h.format) && h.reserved == 0 &&
         cast_prescale_valid(h.prescale) && h.count == count;
}

BAGUA_HD uint16_t cast_to_wire(CastFormat f, float x) {
  return f == CastFormat::fp16 ? float_to_fp16(x) : float_to_bf16(x);
}

BAGUA_HD float cast_from_wire(CastFormat f, uint16_t h) {
  return f == CastFormat::fp16 ? fp16_to_float(h) : bf16_to_float(h);
}

// The three per-element formulas of the cast codec, for every implementation.
BAGUA_HD float cast_scaled(float x, float prescale) { return canonical(x * prescale); }
BAGUA_HD float cast_unscaled(float h, float inv) { return canonical(h * inv); }
BAGUA_HD float cast_accumulated(float h, float inv, float acc) {
  return canonical(fmaf(h, inv, acc));
}

// ---------------------------------------------------------------------------
// MXFP8 (OCP microscaling, E4M3 elements): a 16-byte header, then one scale
// byte per block of kMxBlockElems elements (E8M0: 2^(byte - 127); 0xff marks
// a block that held NaN or Inf, which decodes to NaN as a whole), padded
// with zeros to a multiple of 16 bytes, then one E4M3 byte per element
// (sign bit, 4 exponent bits of bias 7, 3 mantissa bits; no infinities),
// padded likewise. A block's scale exponent is the smallest, at least
// -127, that keeps max |x| / 2^scale <= 448 (E4M3's largest value), so the
// largest element lands in [224, 448]; each element is x / 2^scale rounded
// to nearest even on E4M3's grid (saturated at 448, which no finite block
// reaches). Everything is integer arithmetic on the float's
// bits, and decoding multiplies exact values, so every implementation writes
// and reads the same bytes and values.

constexpr uint8_t kTagMx = 0x4d;  // 'M'
constexpr uint32_t kMxBlockElems = 32;
constexpr uint8_t kMxNonFiniteScale = 0xff;
constexpr int kMxScaleBias = 127;
constexpr int kE4m3MaxExponent = 8;     // 448 = 1.75 * 2^8
constexpr uint8_t kE4m3MaxCode = 0x7e;  // 448; 0x7f is E4M3's NaN
constexpr uint8_t kE4m3NanCode = 0x7f;

struct MxHeader {
  uint8_t tag;         // kTagMx
  uint8_t block;       // log2 of the block size (5: 32 elements)
  uint16_t reserved;   // 0
  uint32_t reserved2;  // 0
  uint64_t count;      // elements
};
static_assert(sizeof(MxHeader) == 16, "mx header is 16 bytes");

BAGUA_HD size_t mx_blocks(size_t count) { return (count + kMxBlockElems - 1) / kMxBlockElems; }

BAGUA_HD size_t mx_encoded_bytes(size_t count) {
  return sizeof(MxHeader) + round_up(mx_blocks(count), 16) + round_up(count, 16);
}

BAGUA_HD bool mx_header_valid(const MxHeader &h, uint64_t count) {
  return h.tag == kTagMx && h.block == 5 && h.reserved == 0 && h.reserved2 == 0 && h.count == count;
}

// floor(log2 |x|) of a finite non-zero float (subnormals too).
BAGUA_HD int mx_floor_log2(float x) {
  const uint32_t bits = float_bits(x) & 0x7fffffffu;
  const int exponent = int(bits >> 23);
  if (exponent != 0) return exponent - 127;
  int top = 22;  // the subnormal's leading mantissa bit
  while (!((bits >> top) & 1u)) --top;
  return top - 149;
}

// The scale byte of a block whose largest magnitude is `amax` (finite): the
// smallest exponent, at least -127, at which amax / 2^e <= 448, so no
// element saturates (floor(log2 amax) - 8 alone would clamp a block whose
// largest element lies in (448, 512) * 2^e, losing up to 1/8 of it).
BAGUA_HD uint8_t mx_scale_byte(float amax) {
  if (amax == 0.0f) return 0;
  int e = mx_floor_log2(amax) - kE4m3MaxExponent;
  // amax's significand above 1.75 (its mantissa field above 0x600000).
  if ((float_bits(amax) & 0x7fffffu) > 0x600000u && (float_bits(amax) >> 23) != 0) ++e;
  return uint8_t((e < -kMxScaleBias ? -kMxScaleBias : e) + kMxScaleBias);
}

// The E4M3 byte of x / 2^(scale - 127), rounded to nearest even, saturated.
BAGUA_HD uint8_t mx_quantize(float x, uint8_t scale) {
  const uint32_t bits = float_bits(x);
  const uint8_t sign = uint8_t((bits >> 24) & 0x80u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude == 0) return sign;
  // x = m * 2^(e - 23) with m the 24-bit significand.
  const int field = int(magnitude >> 23);
  const uint32_t m = field != 0 ? (magnitude & 0x7fffffu) | 0x800000u : magnitude;
  const int e = field != 0 ? field - 127 : -126;
  const int shared = int(scale) - kMxScaleBias;
  // v = x / 2^shared = m * 2^(e - 23 - shared); its quantum on E4M3's grid is
  // 2^(floor(log2 v) - 3) for normal v, 2^-9 below 2^-6.
  const int log2v = mx_floor_log2(x) - shared;
  const int quantum = log2v < -6 ? -9 : log2v - 3;
  const int rshift = quantum - (e - 23 - shared);  // >= 1 for every finite x
  // Round to nearest even without branches (the rounding bits are random).
  const uint32_t shift = rshift < 31 ? uint32_t(rshift) : 31u;
  const uint32_t kept = m >> shift, rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
  const uint32_t q = kept + (uint32_t(rest > half) | (uint32_t(rest == half) & kept & 1u));
  // Subnormal codes are q itself; a normal one is (exponent + 7) * 8 + (q - 8),
  // which carries a rounded-up q of 16 into the next binade.
  const uint32_t code = quantum == -9 ? q : uint32_t(log2v + 6) * 8 + q;
  return uint8_t(sign | (code > kE4m3MaxCode ? kE4m3MaxCode : code));
}

// The value of an E4M3 byte (the NaN code as the canonical NaN).
BAGUA_HD float e4m3_value(uint8_t c) {
  const uint8_t magnitude = c & 0x7f;
  if (magnitude == kE4m3NanCode) return canonical_nan();
  const int exponent = magnitude >> 3, mantissa = magnitude & 7;
  // Subnormal: mantissa * 2^-9; normal: (8 + mantissa) * 2^(exponent - 10).
  const float v = exponent == 0
                      ? float(mantissa) * 0x1p-9f
                      : float(8 + mantissa) * bits_float(uint32_t(exponent - 10 + 127) << 23);
  return (c & 0x80) ? -v : v;
}

// 2^(scale - 127) (scale < 0xff): 2^-127 is the one subnormal.
BAGUA_HD float mx_scale_value(uint8_t scale) {
  return scale == 0 ? bits_float(0x00400000u) : bits_float(uint32_t(scale) << 23);
}

// An element decoded: exact products, saturated (a scale an encoder never
// writes can overflow).
BAGUA_HD float mx_dequantize(uint8_t c, float scale) {
  return canonical(saturate(e4m3_value(c) * scale));
}

}  // namespace bagua::codec

#endif
