// The wire formats by name, for tests: the library names them only in its
// registry (lib/base/wires.cpp), tests by their public bagua_algorithm values.
#pragma once

#include "bagua.h"
#include "base/dtype.hpp"

namespace bagua::wire {

constexpr Wire q8 = Wire(BAGUA_ALGORITHM_Q8);
constexpr Wire q4 = Wire(BAGUA_ALGORITHM_Q4);
constexpr Wire fp16 = Wire(BAGUA_ALGORITHM_FP16);
constexpr Wire bf16 = Wire(BAGUA_ALGORITHM_BF16);
constexpr Wire sign = Wire(BAGUA_ALGORITHM_SIGN);
constexpr Wire mxfp8 = Wire(BAGUA_ALGORITHM_MXFP8);

}  // namespace bagua::wire
