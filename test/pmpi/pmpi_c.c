/* An unmodified MPI program for libbagua-pmpi's tests: it includes only
 * <mpi.h> and knows nothing of bagua. It compares every MPI_Allreduce /
 * MPI_Iallreduce with PMPI_Allreduce on the same inputs: bit-identical where
 * the call stays with MPI or the mode is exact (inputs are small integers, so
 * every summation order gives the same bits), within the documented bound in
 * the relaxed modes; and checks that every rank got the same bits. It prints
 * how many calls the interposer should have routed, which run_pmpi.py
 * compares with the interposer's summary.
 *
 *   pmpi_c MODE MIN_COUNT     (MODE as BAGUA_PMPI; MIN_COUNT as BAGUA_PMPI_MIN_COUNT)
 */
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COUNT = 3001, THREADS = 2, THREAD_CALLS = 4 };

static int world_rank, world_size, min_count;
static _Atomic int failures;
static int thread_multiple;
static const char *mode;
static _Atomic long expected_routed; /* calls the interposer should route */

#define CHECK(cond, ...)                                      \
  do {                                                        \
    if (!(cond)) {                                            \
      fprintf(stderr, "pmpi_c: rank %d: FAIL: ", world_rank); \
      fprintf(stderr, __VA_ARGS__);                           \
      fprintf(stderr, "\n");                                  \
      ++failures;                                             \
    }                                                         \
  } while (0)

static int is_mode(const char *m) { return strcmp(mode, m) == 0; }
static int relaxed(void) { return !is_mode("off") && !is_mode("exact"); }

static int comm_routable(MPI_Comm comm) {
  int inter = 0, size = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter) return 0;
  MPI_Comm_size(comm, &size);
  return size > 1;
}

static int is_float32(MPI_Datatype t) { return t == MPI_FLOAT || t == MPI_REAL || t == MPI_REAL4; }
static int is_float64(MPI_Datatype t) {
  return t == MPI_DOUBLE || t == MPI_DOUBLE_PRECISION || t == MPI_REAL8;
}

/* The routing rule of doc/pmpi.md, written out independently of the library. */
static int should_route(MPI_Datatype t, MPI_Op op, int count, MPI_Comm comm, int nonblocking) {
  if (is_mode("off") || !comm_routable(comm) || count < min_count || count == 0) return 0;
  /* Every mode but sign (a state per buffer) has a nonblocking call. */
  if (nonblocking && (!thread_multiple || is_mode("sign"))) return 0;
  if (relaxed()) return is_float32(t) && op == MPI_SUM;
  return (is_float32(t) || is_float64(t)) && (op == MPI_SUM || op == MPI_MAX || op == MPI_MIN);
}

static int type_size(MPI_Datatype t) {
  int size = 0;
  MPI_Type_size(t, &size);
  return size;
}

/* Small integers: exact in float, float16 and any summation order. */
static double input_value(int rank, int i) { return (double)((i * 7 + rank * 13) % 31) - 15.0; }
enum { INPUT_RANGE = 30, INPUT_ABS_MAX = 15 };

/* What an element of a predefined datatype holds, for filling buffers. */
enum kind {
  K_INT, /* C integers and MPI_BYTE: a small value in the lowest byte */
  K_BOOL,
  K_FLOAT,
  K_DOUBLE,
  K_LONG_DOUBLE,
  K_FLOAT_COMPLEX,
  K_DOUBLE_COMPLEX,
  K_FLOAT_INT,
  K_DOUBLE_INT,
  K_LONG_INT,
  K_SHORT_INT,
  K_2INT
};

static enum kind kind_of(MPI_Datatype t) {
  if (is_float32(t)) return K_FLOAT;
  if (is_float64(t)) return K_DOUBLE;
  const MPI_Datatype others[] = {
      MPI_LONG_DOUBLE, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_FLOAT_INT,
      MPI_DOUBLE_INT,  MPI_LONG_INT,        MPI_SHORT_INT,        MPI_2INT,
      MPI_C_BOOL};
  const enum kind kinds[] = {K_LONG_DOUBLE, K_FLOAT_COMPLEX, K_DOUBLE_COMPLEX,
                             K_FLOAT_INT,   K_DOUBLE_INT,    K_LONG_INT,
                             K_SHORT_INT,   K_2INT,          K_BOOL};
  for (size_t k = 0; k < sizeof others / sizeof others[0]; ++k)
    if (t == others[k]) return kinds[k];
  return K_INT;
}

/* The value pairs of MPI_MAXLOC / MPI_MINLOC, laid out as MPI's types. */
struct float_int {
  float v;
  int i;
};
struct double_int {
  double v;
  int i;
};
struct long_int {
  long v;
  int i;
};
struct short_int {
  short v;
  int i;
};

static MPI_Aint extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(t, &lb, &extent);
  return extent;
}

static void fill_element(char *e, enum kind k, MPI_Aint extent, int rank, int i) {
  const double v = input_value(rank, i);
  const int small = 1 + (i + rank) % 3; /* products of a few ranks stay small */
  switch (k) {
    case K_INT:
      memset(e, 0, extent);
      e[0] = (char)small;
      break;
    case K_BOOL: *(_Bool *)e = (i + rank) % 2; break;
    case K_FLOAT: *(float *)e = (float)v; break;
    case K_DOUBLE: *(double *)e = v; break;
    case K_LONG_DOUBLE: *(long double *)e = small; break;
    case K_FLOAT_COMPLEX: ((float *)e)[0] = small, ((float *)e)[1] = (float)-small; break;
    case K_DOUBLE_COMPLEX: ((double *)e)[0] = small, ((double *)e)[1] = -small; break;
    case K_FLOAT_INT: *(struct float_int *)e = (struct float_int){(float)v, rank}; break;
    case K_DOUBLE_INT: *(struct double_int *)e = (struct double_int){v, rank}; break;
    case K_LONG_INT: *(struct long_int *)e = (struct long_int){(long)v, rank}; break;
    case K_SHORT_INT: *(struct short_int *)e = (struct short_int){(short)v, rank}; break;
    case K_2INT: ((int *)e)[0] = (int)v, ((int *)e)[1] = rank; break;
  }
}

/* count elements of the predefined datatype t; padding bytes are zero. */
static void fill(void *buf, MPI_Datatype t, int count, int rank) {
  const MPI_Aint extent = extent_of(t);
  const enum kind k = kind_of(t);
  memset(buf, 0, (size_t)count * extent);
  for (int i = 0; i < count; ++i) fill_element((char *)buf + i * extent, k, extent, rank, i);
}

/* doc/pmpi.md's bounds, from include/bagua.h: q8 quantizes each input and the
 * sum once (range / 510 each); fp16 rounds each scaled input and the sum
 * (relative 2^-11 each); sign is checked for agreement only. */
static double relaxed_bound(int n) {
  if (is_mode("q8")) return ((n - 1) * INPUT_RANGE + n * INPUT_RANGE) / 510.0 + 1e-4;
  if (is_mode("fp16") || is_mode("bf16")) {
    const double unit = is_mode("fp16") ? ldexp(1.0, -11) : ldexp(1.0, -8);
    return 2 * unit * (2.0 * n * INPUT_ABS_MAX) + 1e-4;
  }
  return INFINITY;
}

static double element(const void *buf, MPI_Datatype t, int i) {
  return is_float32(t) ? ((const float *)buf)[i] : ((const double *)buf)[i];
}

static void compare_results(const char *what, const void *got, const void *want, MPI_Datatype t,
                            int count, int bitwise, int n) {
  const size_t bytes = (size_t)count * extent_of(t);
  if (bitwise) {
    CHECK(memcmp(got, want, bytes) == 0, "%s: result differs from PMPI_Allreduce", what);
    return;
  }
  const double bound = relaxed_bound(n);
  double worst = 0;
  for (int i = 0; i < count; ++i) {
    const double err = fabs(element(got, t, i) - element(want, t, i));
    if (!(err <= worst)) worst = err;
  }
  CHECK(worst <= bound, "%s: error %g above the bound %g", what, worst, bound);
}

/* Every rank of comm holds the same bits as its rank 0. */
static void check_identical(const char *what, const void *buf, size_t bytes, MPI_Comm comm) {
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter) return;
  char *root = malloc(bytes);
  memcpy(root, buf, bytes);
  PMPI_Bcast(root, (int)bytes, MPI_BYTE, 0, comm);
  CHECK(memcmp(root, buf, bytes) == 0, "%s: ranks hold different results", what);
  free(root);
}

static int comm_size_for_bound(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  return size;
}

/* One MPI_Allreduce checked against PMPI_Allreduce. `item` is the element
 * type (the datatype itself unless derived). */
static void check_allreduce(const char *what, MPI_Datatype t, MPI_Datatype item, MPI_Op op,
                            int count, MPI_Comm comm, int in_place) {
  const size_t bytes = (size_t)count * extent_of(t);
  const int items = count * (int)(extent_of(t) / extent_of(item));
  void *in = calloc(bytes + 1, 1), *got = calloc(bytes + 1, 1), *want = calloc(bytes + 1, 1);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  fill(in, item, items, rank);
  PMPI_Allreduce(in, want, count, t, op, comm);
  const int routed = should_route(t, op, count, comm, 0);
  expected_routed += routed;
  int rc;
  if (in_place) {
    memcpy(got, in, bytes);
    rc = MPI_Allreduce(MPI_IN_PLACE, got, count, t, op, comm);
  } else {
    rc = MPI_Allreduce(in, got, count, t, op, comm);
  }
  CHECK(rc == MPI_SUCCESS, "%s: MPI_Allreduce returned %d", what, rc);
  compare_results(what, got, want, item, items, !routed || !relaxed(), comm_size_for_bound(comm));
  check_identical(what, got, bytes, comm);
  free(in);
  free(got);
  free(want);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t) {
  const int n = *len * (type_size(*t) / (int)sizeof(float));
  for (int i = 0; i < n; ++i) ((float *)inout)[i] += ((float *)in)[i];
}

static void check_routed_types(void) {
  check_allreduce("float sum", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("float sum in place", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_WORLD, 1);
  check_allreduce("float max", MPI_FLOAT, MPI_FLOAT, MPI_MAX, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("double sum", MPI_DOUBLE, MPI_DOUBLE, MPI_SUM, COUNT, MPI_COMM_WORLD, 1);
  check_allreduce("double min", MPI_DOUBLE, MPI_DOUBLE, MPI_MIN, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("MPI_REAL sum", MPI_REAL, MPI_REAL, MPI_SUM, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("MPI_DOUBLE_PRECISION max", MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION, MPI_MAX,
                  COUNT, MPI_COMM_WORLD, 1);
  check_allreduce("float sum at the minimum count", MPI_FLOAT, MPI_FLOAT, MPI_SUM, min_count,
                  MPI_COMM_WORLD, 0);
}

/* Every predefined datatype with every op MPI defines for it, at counts
 * around the minimum: each is routed or passed through by the rule, and
 * either way equals PMPI_Allreduce (as an MPI test suite would check). */
static void check_type_op_matrix(void) {
  const MPI_Datatype types[] = {MPI_SIGNED_CHAR,
                                MPI_UNSIGNED_CHAR,
                                MPI_SHORT,
                                MPI_UNSIGNED_SHORT,
                                MPI_INT,
                                MPI_UNSIGNED,
                                MPI_LONG,
                                MPI_UNSIGNED_LONG,
                                MPI_LONG_LONG,
                                MPI_UNSIGNED_LONG_LONG,
                                MPI_INT8_T,
                                MPI_UINT16_T,
                                MPI_INT32_T,
                                MPI_UINT64_T,
                                MPI_BYTE,
                                MPI_C_BOOL,
                                MPI_FLOAT,
                                MPI_DOUBLE,
                                MPI_LONG_DOUBLE,
                                MPI_REAL,
                                MPI_REAL4,
                                MPI_REAL8,
                                MPI_DOUBLE_PRECISION,
                                MPI_C_FLOAT_COMPLEX,
                                MPI_C_DOUBLE_COMPLEX,
                                MPI_FLOAT_INT,
                                MPI_DOUBLE_INT,
                                MPI_LONG_INT,
                                MPI_SHORT_INT,
                                MPI_2INT};
  const MPI_Op arithmetic[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  const MPI_Op logical[] = {MPI_LAND, MPI_LOR, MPI_LXOR};
  const MPI_Op bitwise[] = {MPI_BAND, MPI_BOR, MPI_BXOR};
  const MPI_Op location[] = {MPI_MAXLOC, MPI_MINLOC};
  const int counts[] = {1, min_count - 1, min_count, COUNT};
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    const enum kind k = kind_of(types[t]);
    const int is_byte = types[t] == MPI_BYTE, is_int = k == K_INT && !is_byte;
    const int is_real = k == K_FLOAT || k == K_DOUBLE || k == K_LONG_DOUBLE;
    const int is_complex = k == K_FLOAT_COMPLEX || k == K_DOUBLE_COMPLEX;
    const int is_pair = k >= K_FLOAT_INT;
    MPI_Op ops[10];
    int n = 0;
    for (int o = 0; o < 4; ++o)
      if (is_int || is_real || (is_complex && o < 2)) ops[n++] = arithmetic[o];
    for (int o = 0; o < 3; ++o)
      if (is_int || k == K_BOOL) ops[n++] = logical[o];
    for (int o = 0; o < 3; ++o)
      if (is_int || is_byte) ops[n++] = bitwise[o];
    for (int o = 0; o < 2; ++o)
      if (is_pair) ops[n++] = location[o];
    for (int o = 0; o < n; ++o)
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; ++c) {
        char what[64];
        snprintf(what, sizeof what, "matrix type %zu op %d count %d", t, o, counts[c]);
        check_allreduce(what, types[t], types[t], ops[o], counts[c], MPI_COMM_WORLD, (int)c % 2);
      }
  }
}

static void check_pass_through(void) {
  MPI_Op user_op;
  MPI_Op_create(user_sum, 1, &user_op);
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_FLOAT, &pair);
  MPI_Type_commit(&pair);
  check_allreduce("int sum", MPI_INT, MPI_INT, MPI_SUM, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("float prod", MPI_FLOAT, MPI_FLOAT, MPI_PROD, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("float user op", MPI_FLOAT, MPI_FLOAT, user_op, COUNT, MPI_COMM_WORLD, 1);
  check_allreduce("derived type", pair, MPI_FLOAT, user_op, COUNT, MPI_COMM_WORLD, 0);
  check_allreduce("below the minimum count", MPI_FLOAT, MPI_FLOAT, MPI_SUM, min_count - 1,
                  MPI_COMM_WORLD, 0);
  check_allreduce("zero count", MPI_FLOAT, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, 0);
  check_allreduce("MPI_COMM_SELF", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_SELF, 0);
  MPI_Type_free(&pair);
  MPI_Op_free(&user_op);
}

static void check_communicators(void) {
  MPI_Comm dup, split, local, inter;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  check_allreduce("dup", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, dup, 0);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &split);
  check_allreduce("split", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, split, 1);
  if (world_size >= 2) {
    MPI_Comm_split(MPI_COMM_WORLD, world_rank < world_size / 2, world_rank, &local);
    const int remote_leader = world_rank < world_size / 2 ? world_size / 2 : 0;
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote_leader, 7, &inter);
    check_allreduce("intercommunicator", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, inter, 0);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
  }
  MPI_Comm_free(&split);
  MPI_Comm_free(&dup);
}

/* ---- MPI_Iallreduce with every completion style ---- */

struct pending {
  float in[COUNT], got[COUNT], want[COUNT];
  int iin[COUNT], igot[COUNT], iwant[COUNT];
  MPI_Request req[2];
};

static void start_pair(struct pending *p, int salt) {
  fill(p->in, MPI_FLOAT, COUNT, world_rank + salt);
  fill(p->iin, MPI_INT, COUNT, world_rank + salt);
  PMPI_Allreduce(p->in, p->want, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Allreduce(p->iin, p->iwant, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  expected_routed += should_route(MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_WORLD, 1);
  MPI_Iallreduce(p->in, p->got, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &p->req[0]);
  MPI_Iallreduce(p->iin, p->igot, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &p->req[1]);
}

static void check_pair(const char *what, struct pending *p) {
  CHECK(p->req[0] == MPI_REQUEST_NULL && p->req[1] == MPI_REQUEST_NULL, "%s: requests not freed",
        what);
  const int routed = should_route(MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_WORLD, 1);
  compare_results(what, p->got, p->want, MPI_FLOAT, COUNT, !routed || !relaxed(), world_size);
  compare_results(what, p->igot, p->iwant, MPI_INT, COUNT, 1, world_size);
  check_identical(what, p->got, sizeof p->got, MPI_COMM_WORLD);
}

static void check_iallreduce(void) {
  struct pending *p = malloc(sizeof *p);
  int flag = 0, index = 0, done = 0, outcount = 0, indices[2];
  start_pair(p, 1);
  MPI_Wait(&p->req[0], MPI_STATUS_IGNORE);
  MPI_Wait(&p->req[1], MPI_STATUS_IGNORE);
  check_pair("iallreduce + MPI_Wait", p);
  start_pair(p, 2);
  for (int r = 0; r < 2; ++r)
    for (flag = 0; !flag;) MPI_Test(&p->req[r], &flag, MPI_STATUS_IGNORE);
  check_pair("iallreduce + MPI_Test", p);
  start_pair(p, 3);
  MPI_Waitall(2, p->req, MPI_STATUSES_IGNORE);
  check_pair("iallreduce + MPI_Waitall", p);
  start_pair(p, 4);
  for (int r = 0; r < 2; ++r) MPI_Waitany(2, p->req, &index, MPI_STATUS_IGNORE);
  check_pair("iallreduce + MPI_Waitany", p);
  start_pair(p, 5);
  for (done = 0; done < 2; done += outcount)
    MPI_Testsome(2, p->req, &outcount, indices, MPI_STATUSES_IGNORE);
  check_pair("iallreduce + MPI_Testsome", p);
  free(p);
}

/* ---- buffers MPI accepts and bagua would not: misaligned floats ---- */

static void check_misaligned(void) {
  const size_t bytes = COUNT * sizeof(float);
  char *in = malloc(bytes + 1), *got = malloc(bytes + 1);
  float *aligned = malloc(bytes), *want = malloc(bytes);
  MPI_Request req;
  fill(aligned, MPI_FLOAT, COUNT, world_rank);
  memcpy(in + 1, aligned, bytes);
  PMPI_Allreduce(aligned, want, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const int routed = should_route(MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_WORLD, 0);
  expected_routed += routed + should_route(MPI_FLOAT, MPI_SUM, COUNT, MPI_COMM_WORLD, 1);
  MPI_Allreduce(in + 1, got + 1, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  memcpy(aligned, got + 1, bytes);
  compare_results("misaligned", aligned, want, MPI_FLOAT, COUNT, !routed || !relaxed(), world_size);
  MPI_Iallreduce(in + 1, got + 1, COUNT, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  memcpy(aligned, got + 1, bytes);
  compare_results("misaligned iallreduce", aligned, want, MPI_FLOAT, COUNT, !routed || !relaxed(),
                  world_size);
  free(in);
  free(got);
  free(aligned);
  free(want);
}

/* ---- threads: concurrent calls on communicators of their own ---- */

static void *thread_calls(void *arg) {
  MPI_Comm comm = *(MPI_Comm *)arg;
  for (int i = 0; i < THREAD_CALLS; ++i)
    check_allreduce("thread", MPI_FLOAT, MPI_FLOAT, MPI_SUM, COUNT, comm, i % 2);
  return NULL;
}

static void check_threads(void) {
  if (!thread_multiple) return;
  MPI_Comm comms[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  for (int t = 0; t < THREADS; ++t) pthread_create(&threads[t], NULL, thread_calls, &comms[t]);
  for (int t = 0; t < THREADS; ++t) pthread_join(threads[t], NULL);
  for (int t = 0; t < THREADS; ++t) MPI_Comm_free(&comms[t]);
}

/* ---- a failure inside bagua reaches the communicator's error handler ---- */

static int handler_calls, handler_class;

static void count_error(MPI_Comm *comm, int *code, ...) {
  (void)comm;
  ++handler_calls;
  MPI_Error_class(*code, &handler_class);
}

static void check_error_handler(void) {
  MPI_Comm comm;
  MPI_Errhandler handler;
  float *buf = calloc(COUNT, sizeof(float));
  /* bagua reads its settings when it first meets a communicator; an
   * out-of-range one makes that call fail on every rank alike. */
  setenv("BAGUA_SEGMENT_BYTES", "1", 1);
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_create_errhandler(count_error, &handler);
  MPI_Comm_set_errhandler(comm, handler);
  const int routed = should_route(MPI_FLOAT, MPI_SUM, COUNT, comm, 0);
  expected_routed += routed;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, buf, COUNT, MPI_FLOAT, MPI_SUM, comm);
  CHECK(rc == (routed ? MPI_ERR_ARG : MPI_SUCCESS), "error handler: MPI_Allreduce returned %d", rc);
  CHECK(handler_calls == routed && (!routed || handler_class == MPI_ERR_ARG),
        "error handler: called %d times with class %d", handler_calls, handler_class);
  unsetenv("BAGUA_SEGMENT_BYTES");
  MPI_Errhandler_free(&handler);
  MPI_Comm_free(&comm);
  free(buf);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: pmpi_c MODE MIN_COUNT\n");
    return 2;
  }
  mode = argv[1];
  min_count = atoi(argv[2]);
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  thread_multiple = provided == MPI_THREAD_MULTIPLE;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  check_routed_types();
  check_type_op_matrix();
  check_pass_through();
  check_communicators();
  check_iallreduce();
  check_misaligned();
  check_threads();
  check_error_handler();
  printf("pmpi-test: rank %d expects routed %ld failures %d\n", world_rank, (long)expected_routed,
         (int)failures);
  fflush(stdout);
  MPI_Finalize();
  return failures != 0;
}
