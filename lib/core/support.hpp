// The support matrix: which wire formats each collective family offers, and
// for which datatypes, ops and memory types. Validation (describe_*) and
// bagua-info both read this one table, so the documented matrix and the
// code cannot drift apart.
#pragma once

#include <span>
#include <string>

#include "call.hpp"

namespace bagua {

struct SupportRow {
  Family family;
  Wire wire;
  uint8_t dtypes;  // bit (1 << DType)
  uint8_t ops;     // bit (1 << ReduceOp)
  uint8_t memory;  // bit (1 << Memory)
};

std::span<const SupportRow> support_matrix();

// Checks one call's combination; the message names the rule it broke.
Status check_support(Family family, Wire wire, DType t, ReduceOp op, Memory memory);
// Only the op (a family and wire without a row pass).
Status check_op(Family family, Wire wire, ReduceOp op);

// "MPI_FLOAT, BAGUA_FLOAT16 or BAGUA_BFLOAT16" for a dtype bit set.
std::string dtype_list(uint8_t dtypes);
std::string op_list(uint8_t ops);
std::string memory_list(uint8_t memory);
// One row as bagua-info prints it and doc/api.md lists it (a table row).
std::string support_row_text(const SupportRow &row);

}  // namespace bagua
