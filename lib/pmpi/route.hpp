// The routing rule of the PMPI interposer: which MPI_Allreduce /
// MPI_Iallreduce calls go to bagua and which stay with MPI. Pure (no MPI), so
// it is unit-tested on its own (the algorithms' names and families are
// bagua's local queries). It reads only what MPI requires to be equal on
// every rank of a collective (datatype, op, count, communicator), so every
// rank decides alike.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>

#include "bagua.h"

namespace bagua::pmpi {

// BAGUA_PMPI: off passes everything to MPI; any other value is the
// bagua_algorithm of that name (bagua_algorithm_name lists them): exact uses
// bagua_allreduce, the others are the relaxed (compressed) allreduces.
enum class Mode : int { off = -1 };
constexpr Mode mode_of(bagua_algorithm a) { return static_cast<Mode>(a); }
constexpr bagua_algorithm algorithm_of(Mode m) { return static_cast<bagua_algorithm>(m); }

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

// The modes with a nonblocking bagua call (the algorithms the iallreduce
// family offers: bagua_iallreduce_alg).
bool has_nonblocking(Mode mode);

// Parses a BAGUA_PMPI value; false if it is not a mode name.
bool parse_mode(std::string_view text, Mode *out);
// "off", or the algorithm's name.
const char *mode_name(Mode mode);
// "bagua", "off", "small", "comm", "type", "op", "nonblocking".
const char *route_name(Route route);

}  // namespace bagua::pmpi
