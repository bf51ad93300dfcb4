// libbagua-pmpi: loaded with LD_PRELOAD into an unmodified MPI program, it
// defines MPI_Init, MPI_Init_thread, MPI_Allreduce and MPI_Iallreduce and
// routes the calls the rule in route.hpp selects to bagua; everything else
// goes on to the next MPI_Allreduce (another PMPI tool, or MPI) (doc/pmpi.md).
#include "interposer.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "bagua.h"
#include "bagua_calls.hpp"
#include "settings.hpp"
#include "stats.hpp"

namespace bagua::pmpi {
namespace {

// ---------------------------------------------------------------------------
// Process state: the settings (read once), the policy derived from them and
// MPI's thread level, the counters.

struct Runtime {
  bool settings_ok = false;
  std::string settings_error;
  Settings settings;
  Policy policy;
  Stats stats;
  int world_rank = -1;
};

Runtime &runtime() {
  static Runtime rt;
  static std::once_flag once;
  std::call_once(once, [] {
    rt.settings_ok =
        parse_settings([](const char *name) -> const char * { return std::getenv(name); },
                       &rt.settings, &rt.settings_error);
    rt.policy.mode = rt.settings.mode;
    rt.policy.min_count = rt.settings.min_count;
  });
  return rt;
}

[[noreturn]] void abort_job(const std::string &message) {
  std::fprintf(stderr, "bagua-pmpi: %s\n", message.c_str());
  std::fflush(stderr);
  PMPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// MPI_Iallreduce routing runs bagua's background threads.
bool wants_thread_multiple(const Settings &s) { return s.iallreduce && has_nonblocking(s.mode); }

// All ranks must route alike; a rank started with other BAGUA_PMPI settings
// would hang or compute something else, so the job stops at MPI_Init instead.
void check_settings_agree(const Policy &p) {
  const long long mine[3] = {static_cast<long long>(p.mode), p.min_count, p.nonblocking};
  long long both[6] = {mine[0], mine[1], mine[2], -mine[0], -mine[1], -mine[2]}, extremes[6];
  PMPI_Allreduce(both, extremes, 6, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < 3; ++i)
    if (extremes[i] != -extremes[i + 3])
      abort_job(
          "BAGUA_PMPI, BAGUA_PMPI_MIN_COUNT, BAGUA_PMPI_IALLREDUCE or the thread level "
          "differ across ranks; set them alike on every rank (mpirun -x)");
}

int print_summary(MPI_Comm, int, void *, void *) {
  const Runtime &rt = runtime();
  std::fprintf(stderr, "%s\n", rt.stats.summary(rt.world_rank, rt.policy).c_str());
  return MPI_SUCCESS;
}

// MPI deletes MPI_COMM_SELF's attributes first thing in MPI_Finalize, in
// every language binding: the summary is printed from there.
void print_summary_at_finalize() {
  int keyval = MPI_KEYVAL_INVALID;
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, print_summary, &keyval, nullptr);
  PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr);
}

// Once MPI is up: validates the settings, derives the policy, and (when
// called from MPI_Init on every rank) checks that all ranks agree.
void start(bool collective_on_world) {
  static std::once_flag once;
  std::call_once(once, [collective_on_world] {
    Runtime &rt = runtime();
    PMPI_Comm_rank(MPI_COMM_WORLD, &rt.world_rank);
    if (!rt.settings_ok) abort_job(rt.settings_error);
    int provided = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&provided);
    rt.policy.nonblocking = rt.settings.iallreduce && provided == MPI_THREAD_MULTIPLE;
    if (rt.settings.verbose) print_summary_at_finalize();
    if (collective_on_world && rt.policy.mode != Mode::off) check_settings_agree(rt.policy);
  });
}

// ---------------------------------------------------------------------------
// Re-entry guard: bagua makes MPI_Allreduce / MPI_Allgather calls of its own
// (option agreement, address exchange) on the calling thread; while a routed
// call runs, every MPI_Allreduce / MPI_Iallreduce of this thread goes
// straight to PMPI.

thread_local bool t_in_bagua = false;

class BaguaScope {
 public:
  BaguaScope() { t_in_bagua = true; }
  ~BaguaScope() { t_in_bagua = false; }
  BaguaScope(const BaguaScope &) = delete;
  BaguaScope &operator=(const BaguaScope &) = delete;
};

template <class RunBagua>
int run_guarded(const RunBagua &run_bagua, Mode mode, TypeClass type) {
  BaguaScope scope;
  return run_bagua(mode, type);
}

// ---------------------------------------------------------------------------
// Where the program's unrouted calls go: the next definition after this
// library, which is another PMPI tool preloaded after it (so tools stack) or
// MPI itself, whose MPI_ symbols are its PMPI_ ones. bagua's own calls go to
// PMPI_ directly.

template <class Fn>
Fn next_definition(const char *name, Fn pmpi) {
  void *next = dlsym(RTLD_NEXT, name);
  return next != nullptr ? reinterpret_cast<Fn>(next) : pmpi;
}

decltype(&PMPI_Allreduce) next_allreduce() {
  static const auto fn = next_definition("MPI_Allreduce", &PMPI_Allreduce);
  return fn;
}

decltype(&PMPI_Iallreduce) next_iallreduce() {
  static const auto fn = next_definition("MPI_Iallreduce", &PMPI_Iallreduce);
  return fn;
}

// ---------------------------------------------------------------------------
// Classifying a call's collective-invariant arguments.

bool is_real_type(MPI_Datatype t) {
  return t == MPI_FLOAT || t == MPI_DOUBLE || t == MPI_REAL || t == MPI_REAL4 || t == MPI_REAL8 ||
         t == MPI_DOUBLE_PRECISION;
}

// Fortran's MPI_REAL and MPI_DOUBLE_PRECISION are distinct handles whose
// size Open MPI fixes at build time, so the class follows the size.
TypeClass type_class(MPI_Datatype t) {
  if (t == MPI_DATATYPE_NULL || !is_real_type(t)) return TypeClass::other;
  int size = 0;
  PMPI_Type_size(t, &size);
  if (size == 4) return TypeClass::float32;
  return size == 8 ? TypeClass::float64 : TypeClass::other;
}

OpClass op_class(MPI_Op op) {
  if (op == MPI_SUM) return OpClass::sum;
  if (op == MPI_MAX) return OpClass::max;
  return op == MPI_MIN ? OpClass::min : OpClass::other;
}

CommKind comm_kind(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return CommKind::null;
  int inter = 0, size = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return CommKind::null;
  if (inter) return CommKind::inter;
  PMPI_Comm_size(comm, &size);
  return size > 1 ? CommKind::intra : CommKind::single_rank;
}

CallShape shape_of(int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, CallKind call) {
  return {type_class(datatype), op_class(op), count, comm_kind(comm), call};
}

uint64_t payload_bytes(int count, MPI_Datatype datatype) {
  int size = 0;
  if (count <= 0 || datatype == MPI_DATATYPE_NULL || PMPI_Type_size(datatype, &size) != MPI_SUCCESS)
    return 0;
  return static_cast<uint64_t>(count) * static_cast<uint64_t>(size);
}

// ---------------------------------------------------------------------------
// Failures of routed calls reach the program as MPI errors.

int mpi_error_class(int status) {
  switch (status) {
    case BAGUA_ERR_INVALID_ARGUMENT: return MPI_ERR_ARG;
    case BAGUA_ERR_UNSUPPORTED_DATATYPE: return MPI_ERR_TYPE;
    case BAGUA_ERR_UNSUPPORTED_OP: return MPI_ERR_OP;
    case BAGUA_ERR_OUT_OF_MEMORY: return MPI_ERR_NO_MEM;
    default: return MPI_ERR_OTHER;
  }
}

// Prints bagua's detailed message (the MPI error handler only sees a class)
// and calls comm's error handler, as MPI does for its own failures.
int report_failure(MPI_Comm comm, const char *function, int status) {
  std::fprintf(stderr, "bagua-pmpi: rank %d: %s failed: %s: %s\n", runtime().world_rank, function,
               bagua_error_string(status), bagua_last_error());
  const int error = mpi_error_class(status);
  PMPI_Comm_call_errhandler(comm, error);
  return error;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One intercepted call: bagua's own calls go to `pass(false)` (the PMPI_
// function), unrouted ones to `pass(true)` (the next definition), routed ones
// to `run_bagua(mode, type class)`, which returns a bagua status.
template <class Pass, class RunBagua>
int intercept(CallKind call, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
              const Pass &pass, const RunBagua &run_bagua) {
  Runtime &rt = runtime();
  if (t_in_bagua) {
    rt.stats.record_inner();
    return pass(false);
  }
  start(/*collective_on_world=*/false);
  const CallShape shape = shape_of(count, datatype, op, comm, call);
  const Route where = route(rt.policy, shape);
  const auto t0 = std::chrono::steady_clock::now();
  int rc = MPI_SUCCESS;
  if (where != Route::bagua) {
    rc = pass(true);
  } else if (const int status = run_guarded(run_bagua, rt.policy.mode, shape.type);
             status != BAGUA_SUCCESS) {
    rc = report_failure(comm, bagua_function(rt.policy.mode, call), status);
  }
  rt.stats.record(where, payload_bytes(count, datatype), seconds_since(t0));
  return rc;
}

}  // namespace

int init_thread(int *argc, char ***argv, int required, int *provided) {
  const Runtime &rt = runtime();
  const bool raise = rt.settings_ok && wants_thread_multiple(rt.settings);
  const int rc = PMPI_Init_thread(argc, argv, raise ? MPI_THREAD_MULTIPLE : required, provided);
  if (rc == MPI_SUCCESS) start(/*collective_on_world=*/true);
  return rc;
}

int init(int *argc, char ***argv) {
  const Runtime &rt = runtime();
  if (rt.settings_ok && wants_thread_multiple(rt.settings)) {
    int provided = MPI_THREAD_SINGLE;
    return init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
  }
  const int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) start(/*collective_on_world=*/true);
  return rc;
}

int allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm) {
  return intercept(
      CallKind::blocking, count, datatype, op, comm,
      [&](bool next) {
        return (next ? next_allreduce() : PMPI_Allreduce)(sendbuf, recvbuf, count, datatype, op,
                                                          comm);
      },
      [&](Mode mode, TypeClass type) {
        return run_blocking(mode, sendbuf, recvbuf, count, type, op, comm);
      });
}

int iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm, MPI_Request *request) {
  return intercept(
      CallKind::nonblocking, count, datatype, op, comm,
      [&](bool next) {
        return (next ? next_iallreduce() : PMPI_Iallreduce)(sendbuf, recvbuf, count, datatype, op,
                                                            comm, request);
      },
      [&](Mode mode, TypeClass type) {
        const int status = run_nonblocking(mode, sendbuf, recvbuf, count, type, op, comm, request);
        if (status != BAGUA_SUCCESS) *request = MPI_REQUEST_NULL;
        return status;
      });
}

}  // namespace bagua::pmpi

// ---------------------------------------------------------------------------
// The C symbols the program calls.

extern "C" {

/** MPI_Init; raises the thread level to MPI_THREAD_MULTIPLE when
 *  MPI_Iallreduce routing is on (a BAGUA_PMPI mode with a nonblocking call,
 *  BAGUA_PMPI_IALLREDUCE=1). */
BAGUA_PMPI_EXPORT int MPI_Init(int *argc, char ***argv) { return bagua::pmpi::init(argc, argv); }

/** MPI_Init_thread; raises `required` as MPI_Init does. */
BAGUA_PMPI_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  return bagua::pmpi::init_thread(argc, argv, required, provided);
}

/** MPI_Allreduce: bagua for the calls BAGUA_PMPI routes, PMPI_Allreduce otherwise. */
BAGUA_PMPI_EXPORT int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return bagua::pmpi::allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/** MPI_Iallreduce: bagua_iallreduce_alg for routed calls, PMPI_Iallreduce otherwise. */
BAGUA_PMPI_EXPORT int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     MPI_Request *request) {
  return bagua::pmpi::iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

}  // extern "C"
