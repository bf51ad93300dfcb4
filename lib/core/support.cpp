#include "support.hpp"

#include <string>
#include <vector>

namespace bagua {
namespace {

constexpr uint8_t bit(DType t) { return uint8_t(1u << unsigned(t)); }
constexpr uint8_t bit(ReduceOp op) { return uint8_t(1u << unsigned(op)); }
constexpr uint8_t bit(Memory m) { return uint8_t(1u << unsigned(m)); }

constexpr uint8_t kAllTypes =
    bit(DType::f32) | bit(DType::f64) | bit(DType::f16) | bit(DType::bf16);
// The codecs read float32 and the half types (doc/codecs.md).
constexpr uint8_t kCodecTypes = bit(DType::f32) | bit(DType::f16) | bit(DType::bf16);
constexpr uint8_t kAllOps =
    bit(ReduceOp::sum) | bit(ReduceOp::max) | bit(ReduceOp::min) | bit(ReduceOp::avg);
// A compressed sum is a sum of decoded values: max and min have no codec.
constexpr uint8_t kSumOps = bit(ReduceOp::sum) | bit(ReduceOp::avg);
constexpr uint8_t kAverage = bit(ReduceOp::avg);
constexpr uint8_t kAnyMemory = bit(Memory::host) | bit(Memory::cuda);

// The ops a family's rows take: averages for the averaging families, sums
// for the codecs (a compressed sum is a sum of decoded values: max and min
// have no codec), every op of the exact reductions.
uint8_t ops_of(Family family, Wire wire) {
  switch (family) {
    case Family::partial:
    case Family::decentralized:
    case Family::lowprec:
    case Family::async: return kAverage;
    case Family::reduce_scatter: return is_codec(wire) ? kSumOps : kAllOps | bit(ReduceOp::prod);
    default: return is_codec(wire) ? kSumOps : kAllOps;
  }
}

// Device buffers: every family but reduce_scatter_block. The compressed
// allreduce runs on the device; the core stages the other blocking calls
// through page-locked host memory (select.hpp, runs_on_device), buckets
// pack device tensors into host storage, nonblocking calls stage through a
// pool of page-locked slots, and asynchronous averaging through a
// page-locked copy of its buffer on its thread's stream.
uint8_t memory_of(Family family) {
  return family == Family::reduce_scatter ? bit(Memory::host) : kAnyMemory;
}

// One row per family and wire the registry pairs, families in order.
std::vector<SupportRow> make_matrix() {
  std::vector<SupportRow> rows;
  for (int f = 0; f < kFamilies; ++f)
    for (const WireInfo &w : wires()) {
      const Family family = Family(f);
      if (!offers(family, w.id)) continue;
      rows.push_back({family, w.id, is_codec(w.id) ? kCodecTypes : kAllTypes, ops_of(family, w.id),
                      memory_of(family)});
    }
  return rows;
}

const std::vector<SupportRow> &matrix() {
  static const std::vector<SupportRow> rows = make_matrix();
  return rows;
}

const SupportRow *find_row(Family family, Wire wire) {
  for (const SupportRow &row : matrix())
    if (row.family == family && row.wire == wire) return &row;
  return nullptr;
}

// "a, b or c" from the names of the set bits of `bits` (values 0..count-1).
template <class Name>
std::string list_of(uint8_t bits, int count, Name name) {
  std::string out;
  int listed = 0, total = 0;
  for (int i = 0; i < count; ++i) total += (bits >> i) & 1;
  for (int i = 0; i < count; ++i) {
    if (!((bits >> i) & 1)) continue;
    if (listed > 0) out += listed + 1 == total ? " or " : ", ";
    out += name(i);
    ++listed;
  }
  return out;
}

}  // namespace

std::span<const SupportRow> support_matrix() { return matrix(); }

std::string dtype_list(uint8_t dtypes) {
  return list_of(dtypes, 4, [](int i) { return dtype_name(DType(i)); });
}
std::string op_list(uint8_t ops) {
  return list_of(ops, 5, [](int i) { return op_name(ReduceOp(i)); });
}
std::string memory_list(uint8_t memory) {
  return list_of(memory, 2, [](int i) { return i == 0 ? "host" : "cuda"; });
}

std::string support_row_text(const SupportRow &row) {
  return std::string("| ") + family_name(row.family) + " | " + wire_name(row.wire) + " | " +
         dtype_list(row.dtypes) + " | " + op_list(row.ops) + " | " + memory_list(row.memory) + " |";
}

Status check_op(Family family, Wire wire, ReduceOp op) {
  const SupportRow *row = find_row(family, wire);
  if (row != nullptr && !(row->ops & bit(op)))
    return fail(BAGUA_ERR_UNSUPPORTED_OP, "op must be %s for %s (got %s)",
                op_list(row->ops).c_str(), wire_name(wire), op_name(op));
  return BAGUA_SUCCESS;
}

Status check_support(Family family, Wire wire, DType t, ReduceOp op, Memory memory) {
  const SupportRow *row = find_row(family, wire);
  if (row == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "the %s family does not offer the %s wire format",
                family_name(family), wire_name(wire));
  if (!(row->dtypes & bit(t)))
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype must be %s for %s (got %s)",
                dtype_list(row->dtypes).c_str(), wire_name(wire), dtype_name(t));
  BAGUA_TRY(check_op(family, wire, op));
  if (!(row->memory & bit(memory)))
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "CUDA device buffers are not supported by %s with %s; pass host memory",
                family_name(family), wire_name(wire));
  return BAGUA_SUCCESS;
}

}  // namespace bagua
