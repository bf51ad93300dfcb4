// Typed buffers and per-rank outcomes for the in-process tests.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "base/dtype.hpp"
#include "base/status.hpp"
#include "half.h"

namespace inproc {

// `count` elements of one type, read and written as double, followed by a
// guard area that a write past the end would change.
class Buffer {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr unsigned char kGuardByte = 0xa5;

  Buffer(bagua::DType t, size_t count)
      : type_(t), count_(count), bytes_(count * bagua::dtype_size(t) + kGuardBytes, kGuardByte) {}

  void *data() { return bytes_.data(); }
  size_t payload_bytes() const { return count_ * bagua::dtype_size(type_); }

  void set(size_t i, double v) {
    unsigned char *p = bytes_.data() + i * bagua::dtype_size(type_);
    switch (type_) {
      case bagua::DType::f32: store(p, float(v)); return;
      case bagua::DType::f64: store(p, v); return;
      case bagua::DType::f16: store(p, bagua::float_to_fp16(float(v))); return;
      case bagua::DType::bf16: store(p, bagua::float_to_bf16(float(v))); return;
    }
  }
  double get(size_t i) const {
    const unsigned char *p = bytes_.data() + i * bagua::dtype_size(type_);
    switch (type_) {
      case bagua::DType::f32: return load<float>(p);
      case bagua::DType::f64: return load<double>(p);
      case bagua::DType::f16: return bagua::fp16_to_float(load<uint16_t>(p));
      case bagua::DType::bf16: return bagua::bf16_to_float(load<uint16_t>(p));
    }
    return 0;
  }
  bool guard_intact() const {
    for (size_t i = payload_bytes(); i < bytes_.size(); ++i)
      if (bytes_[i] != kGuardByte) return false;
    return true;
  }
  // FNV-1a over the elements' bytes, 8 at a time: equal digests mean (in
  // practice) equal bits.
  uint64_t digest() const {
    uint64_t h = 0xcbf29ce484222325ull;
    const size_t bytes = payload_bytes();
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t word = 0;
      std::memcpy(&word, bytes_.data() + i, std::min<size_t>(8, bytes - i));
      h = (h ^ word) * 0x100000001b3ull;
    }
    return h;
  }
  // The number of elements that differ in value from the first count() of
  // `want` (same type).
  size_t differences(const Buffer &want) const {
    if (std::memcmp(bytes_.data(), want.bytes_.data(), payload_bytes()) == 0) return 0;
    size_t n = 0;
    for (size_t i = 0; i < count_; ++i) n += get(i) != want.get(i);
    return n;
  }

  // v rounded to type t (through float32 for the half types).
  static double round(bagua::DType t, double v) {
    switch (t) {
      case bagua::DType::f32: return float(v);
      case bagua::DType::f64: return v;
      case bagua::DType::f16: return bagua::fp16_to_float(bagua::float_to_fp16(float(v)));
      case bagua::DType::bf16: return bagua::bf16_to_float(bagua::float_to_bf16(float(v)));
    }
    return v;
  }

 private:
  template <class T>
  static void store(unsigned char *p, T v) {
    std::memcpy(p, &v, sizeof v);
  }
  template <class T>
  static T load(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  bagua::DType type_;
  size_t count_;
  std::vector<unsigned char> bytes_;
};

// An integer in [-15, 15] scrambled over (key, i), so that a misplaced chunk
// or segment shows. Any partial sum of 16 of them is an integer of magnitude
// <= 240, exact in every type (bfloat16 holds integers up to 256).
inline double small_integer(uint64_t key, size_t i) {
  uint64_t h = (uint64_t(i) + 1) * 0x9e3779b97f4a7c15ull ^ (key + 1) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  return double(h % 31) - 15;
}

// What one rank saw in one call.
struct Outcome {
  bagua::Status status = BAGUA_SUCCESS;
  std::string error;  // bagua's message when status is not BAGUA_SUCCESS
  size_t wrong = 0;   // elements that differ from the expected value
  bool guard_intact = true;
  uint64_t digest = 0;  // of the result, for results that must be identical on all ranks

  bool ok() const { return status == BAGUA_SUCCESS && wrong == 0 && guard_intact; }
  std::string describe() const {
    std::ostringstream s;
    s << "status " << status << " (" << error << "), " << wrong << " wrong elements"
      << (guard_intact ? "" : ", wrote past the buffer");
    return s.str();
  }
};

// The outcome of a call that returned `status`, with bagua's message.
inline Outcome outcome_of(bagua::Status status) {
  Outcome o;
  o.status = status;
  if (status != BAGUA_SUCCESS) o.error = bagua::last_error_message();
  return o;
}

// Why rank r's outcome of case c fails ("" if it does not): not ok, or (with
// `identical`) a result whose bits differ from rank 0's.
inline std::string failure(const std::vector<std::vector<Outcome>> &outcomes, size_t r, size_t c,
                           bool identical) {
  const Outcome &o = outcomes[r][c];
  if (!o.ok()) return o.describe();
  if (identical && o.digest != outcomes[0][c].digest) return "result differs from rank 0's";
  return "";
}

// Checks outcomes[rank][case] of `cases` cases on the test thread; label(c)
// names case c. Reports the first few failing (case, rank) pairs, then the
// total.
template <class Label>
void check_outcomes(const std::vector<std::vector<Outcome>> &outcomes, size_t cases, Label label,
                    bool identical = false) {
  constexpr int kReported = 20;
  int failures = 0;
  for (const std::vector<Outcome> &of_rank : outcomes) REQUIRE(of_rank.size() == cases);
  for (size_t c = 0; c < cases; ++c)
    for (size_t r = 0; r < outcomes.size(); ++r) {
      const std::string why = failure(outcomes, r, c, identical);
      if (!why.empty() && ++failures <= kReported)
        FAIL_CHECK(label(c) << ", rank " << r << ": " << why);
    }
  CHECK(failures == 0);
}

}  // namespace inproc
