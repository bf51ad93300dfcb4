// The routing rule of the PMPI interposer: which MPI_Allreduce /
// MPI_Iallreduce calls go to bagua and which stay with MPI. Pure (no MPI), so
// it is unit-tested on its own. It reads only what MPI requires to be equal on
// every rank of a collective (datatype, op, count, communicator), so every
// rank decides alike.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>

namespace bagua::pmpi {

// BAGUA_PMPI: off passes everything to MPI; exact uses bagua_allreduce; the
// others are the relaxed (compressed) allreduces.
enum class Mode { off, exact, q8, fp16, bf16, sign, q4 };

// The datatype as far as routing cares: MPI_FLOAT / MPI_REAL / MPI_REAL4 are
// float32, MPI_DOUBLE / MPI_DOUBLE_PRECISION / MPI_REAL8 float64.
enum class TypeClass { float32, float64, other };

// Predefined MPI_SUM / MPI_MAX / MPI_MIN; everything else (MPI_PROD, user
// ops, ...) is other.
enum class OpClass { sum, max, min, other };

// intra: an intra-communicator of two or more ranks.
enum class CommKind { intra, single_rank, inter, null };

enum class CallKind { blocking, nonblocking };

// Where a call goes; every pass_* value names why it stays with MPI.
enum class Route {
  bagua,
  pass_off,          // BAGUA_PMPI=off
  pass_small,        // count < BAGUA_PMPI_MIN_COUNT
  pass_comm,         // intercommunicator, one rank, MPI_COMM_NULL
  pass_type,         // datatype the mode does not support
  pass_op,           // op the mode does not support
  pass_nonblocking,  // MPI_Iallreduce the mode or the thread level cannot route
};
inline constexpr int kRouteCount = 7;

// Settings every rank shares (they must be equal on all ranks).
struct Policy {
  Mode mode = Mode::off;
  int64_t min_count = 0;
  // MPI_Iallreduce may be routed: BAGUA_PMPI_IALLREDUCE=1 and MPI granted
  // MPI_THREAD_MULTIPLE.
  bool nonblocking = false;
};

// The collective-invariant arguments of one call.
struct CallShape {
  TypeClass type = TypeClass::other;
  OpClass op = OpClass::other;
  int64_t count = 0;
  CommKind comm = CommKind::null;
  CallKind call = CallKind::blocking;
};

// The rule: route to bagua only combinations the mode's bagua function
// supports, on intra-communicators of more than one rank, from min_count
// elements on.
Route route(const Policy &policy, const CallShape &shape);

// The modes with a nonblocking bagua call (bagua_iallreduce, _q8, _q4).
bool has_nonblocking(Mode mode);

// Parses a BAGUA_PMPI value; false if it is not a mode name.
bool parse_mode(std::string_view text, Mode *out);
// "off", "exact", "q8", ...
const char *mode_name(Mode mode);
// "bagua", "off", "small", "comm", "type", "op", "nonblocking".
const char *route_name(Route route);

}  // namespace bagua::pmpi
