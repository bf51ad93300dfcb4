// Element types: the one module every reduction, average and codec uses to
// read and write elements (host and CUDA device code alike). Storage types
// are plain integers for the half types, so the same bytes mean the same
// thing everywhere; arithmetic happens in the compute type (float32, or
// float64 for f64) and every store rounds to nearest even.
#ifndef BAGUA_KERNELS_DTYPE_H
#define BAGUA_KERNELS_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "half.h"

namespace bagua {

enum class DType : uint8_t { f32, f64, f16, bf16 };

constexpr size_t dtype_size(DType t) { return t == DType::f64 ? 8 : t == DType::f32 ? 4 : 2; }

namespace elem {

// Each element type: its storage type T, its compute type, and the
// conversions between them.
struct F32 {
  using T = float;
  using Compute = float;
  static BAGUA_HD float load(float v) { return v; }
  static BAGUA_HD float store(float v) { return v; }
};
struct F64 {
  using T = double;
  using Compute = double;
  static BAGUA_HD double load(double v) { return v; }
  static BAGUA_HD double store(double v) { return v; }
};
struct F16 {
  using T = uint16_t;
  using Compute = float;
  static BAGUA_HD float load(uint16_t v) { return fp16_to_float(v); }
  static BAGUA_HD uint16_t store(float v) { return float_to_fp16(v); }
};
struct BF16 {
  using T = uint16_t;
  using Compute = float;
  static BAGUA_HD float load(uint16_t v) { return bf16_to_float(v); }
  static BAGUA_HD uint16_t store(float v) { return float_to_bf16(v); }
};

// Calls fn with the element tag of t (host code).
template <class Fn>
inline decltype(auto) visit(DType t, Fn &&fn) {
  switch (t) {
    case DType::f64: return fn(F64{});
    case DType::f16: return fn(F16{});
    case DType::bf16: return fn(BF16{});
    case DType::f32: break;
  }
  return fn(F32{});
}

// Element i of a buffer of type E, in E's compute type.
template <class E>
BAGUA_HD typename E::Compute load_at(const void *p, size_t i) {
  return E::load(static_cast<const typename E::T *>(p)[i]);
}
template <class E>
BAGUA_HD void store_at(void *p, size_t i, typename E::Compute v) {
  static_cast<typename E::T *>(p)[i] = E::store(v);
}

}  // namespace elem
}  // namespace bagua

#endif
