#include "route.hpp"

namespace bagua::pmpi {
namespace {

constexpr const char *kRouteNames[kRouteCount] = {"bagua", "off", "small",      "comm",
                                                  "type",  "op",  "nonblocking"};

bool is_relaxed(Mode mode) { return mode != Mode::off && mode != mode_of(BAGUA_ALGORITHM_EXACT); }

// bagua_allreduce: float and double, sum / max / min. The relaxed calls:
// float32 with MPI_SUM only.
bool supports_type(Mode mode, TypeClass type) {
  if (type == TypeClass::float32) return true;
  return type == TypeClass::float64 && !is_relaxed(mode);
}

bool supports_op(Mode mode, OpClass op) {
  if (op == OpClass::sum) return true;
  return (op == OpClass::max || op == OpClass::min) && !is_relaxed(mode);
}

}  // namespace

bool has_nonblocking(Mode mode) {
  return mode != Mode::off && bagua_algorithm_offered(algorithm_of(mode), "iallreduce") &&
         !bagua_algorithm_has_state(algorithm_of(mode));
}

Route route(const Policy &policy, const CallShape &shape) {
  if (policy.mode == Mode::off) return Route::pass_off;
  if (shape.comm != CommKind::intra) return Route::pass_comm;
  if (shape.count < policy.min_count || shape.count <= 0) return Route::pass_small;
  if (!supports_type(policy.mode, shape.type)) return Route::pass_type;
  if (!supports_op(policy.mode, shape.op)) return Route::pass_op;
  if (shape.call == CallKind::nonblocking && !(policy.nonblocking && has_nonblocking(policy.mode)))
    return Route::pass_nonblocking;
  return Route::bagua;
}

bool parse_mode(std::string_view text, Mode *out) {
  if (text == "off") {
    *out = Mode::off;
    return true;
  }
  // Every algorithm bagua lists, by name.
  for (int a = 0; const char *name = bagua_algorithm_name(bagua_algorithm(a)); ++a) {
    if (text == name) {
      *out = mode_of(bagua_algorithm(a));
      return true;
    }
  }
  return false;
}

const char *mode_name(Mode mode) {
  return mode == Mode::off ? "off" : bagua_algorithm_name(algorithm_of(mode));
}

const char *route_name(Route route) { return kRouteNames[static_cast<int>(route)]; }

}  // namespace bagua::pmpi
