#include "wires.hpp"

#include <cassert>
#include <cstring>
#include <vector>

namespace bagua {
namespace {

// Low-precision averaging is q8's alone.
constexpr uint16_t kExactFamilies =
    uint16_t(((1u << kFamilies) - 1) & ~family_bit(Family::lowprec));
// The families whose schedules take any codec without state.
constexpr uint16_t kCodecFamilies = family_bit(Family::allreduce) | family_bit(Family::iallreduce) |
                                    family_bit(Family::bucket) | family_bit(Family::partial) |
                                    family_bit(Family::reduce_scatter);

constexpr const char *kCodecBlock = "BAGUA_CODEC_BLOCK";

// The rows, in bagua_algorithm order (include/bagua.h). Host kernels are
// filled in from kernels/ by name.
std::vector<WireInfo> make_rows() {
  std::vector<WireInfo> rows = {
      {Wire(0), "exact", "exact elements (ring or recursive doubling)", {}, 100, kExactFamilies},
      {Wire(1),
       "q8",
       "8-bit min-max blocks",
       {kCodecBlock},
       50,
       kCodecFamilies | family_bit(Family::lowprec)},
      {Wire(2), "fp16", "float16 cast, prescaled by 1/ranks", {}, 80, kCodecFamilies, true},
      {Wire(3), "bf16", "bfloat16 cast", {}, 70, kCodecFamilies},
      {Wire(4),
       "sign",
       "1-bit sign with error feedback",
       {kCodecBlock},
       10,
       family_bit(Family::allreduce) | family_bit(Family::iallreduce),
       false,
       true,
       true},
      {Wire(5), "q4", "4-bit min-max blocks", {"BAGUA_Q4_BLOCK"}, 30, kCodecFamilies},
      {Wire(6),
       "mxfp8",
       "8-bit float (e4m3) blocks of 32, power-of-two scale (OCP MX)",
       {nullptr, codec::kMxBlockElems},
       60,
       kCodecFamilies},
  };
  for (WireInfo &row : rows)
    if (row.id != Wire::exact) row.host = codec::find_host_kernels(row.name);
  assert(rows.size() <= size_t(kMaxWires));
  return rows;
}

const std::vector<WireInfo> &rows() {
  static const std::vector<WireInfo> table = make_rows();
  return table;
}

}  // namespace

std::span<const WireInfo> wires() { return rows(); }

bool wire_valid(int value) { return value >= 0 && size_t(value) < rows().size(); }

const WireInfo &wire_info(Wire w) { return rows()[size_t(w)]; }

const WireInfo *wire_named(const char *name) {
  if (name == nullptr) return nullptr;
  for (const WireInfo &row : rows())
    if (std::strcmp(row.name, name) == 0) return &row;
  return nullptr;
}

const char *wire_name(Wire w) { return wire_valid(int(w)) ? wire_info(w).name : "?"; }

bool is_codec(Wire w) { return w != Wire::exact; }

bool offers(Family family, Wire w) {
  return wire_valid(int(w)) && (wire_info(w).families & family_bit(family));
}

const WireInfo &lowprec_wire() {
  for (const WireInfo &row : rows())
    if (is_codec(row.id) && (row.families & family_bit(Family::lowprec))) return row;
  return rows().front();
}

const char *family_name(Family f) {
  switch (f) {
    case Family::allreduce: return "allreduce";
    case Family::iallreduce: return "iallreduce";
    case Family::bucket: return "bucket";
    case Family::partial: return "partial";
    case Family::decentralized: return "decentralized";
    case Family::lowprec: return "lowprec";
    case Family::async: return "async";
    case Family::reduce_scatter: return "reduce_scatter_block";
  }
  return "?";
}

}  // namespace bagua
