/*
 * bagua: relaxed collectives for MPI.
 *
 * Every collective takes the same arguments, in the same order, as its MPI
 * counterpart, so an MPI program switches by renaming the call. All functions
 * return an int that is BAGUA_SUCCESS (0) or one of bagua_status_t; no
 * exception or signal ever crosses this interface.
 *
 * Lifetime: nothing needs to be called besides MPI_Init, and bagua_finalize
 * before MPI_Finalize. The first bagua call on a communicator is collective
 * over that communicator: it duplicates the communicator and creates
 * transport endpoints, cached on the user's communicator as an MPI attribute
 * and released when that communicator is freed, by bagua_finalize, or at
 * MPI_Finalize. Its setup (agreeing on BAGUA_* settings,
 * MPI_Comm_idup) is bounded by BAGUA_TIMEOUT_MS, as are the first
 * nonblocking, bucket, asynchronous and partial-reduce calls: a rank whose
 * peers never make the matching call gets BAGUA_ERR_TIMEOUT, and every later
 * bagua call on that communicator returns BAGUA_ERR_COMM_BROKEN. MPI cannot
 * cancel the collective that timed out, so after such a setup timeout (its
 * message names the setup step) keep the communicator until MPI_Finalize:
 * Open MPI 4.1 crashes when a late peer completes a collective of a freed one.
 *
 * After a failure: a call that returned BAGUA_ERR_TIMEOUT (or any error that
 * breaks the communicator) may leave sends to late peers in flight. bagua
 * keeps its own scratch of such a call alive until MPI_Finalize; the call's
 * sendbuf and recvbuf must likewise stay allocated until MPI_Finalize (or be
 * leaked), since a late peer may still read them. Receives are cancelled.
 *
 * Buffers: like MPI, the collectives accept buffers of any alignment (a
 * misaligned host buffer is staged through an aligned copy, which costs one
 * copy each way). The state objects that keep a buffer across calls
 * (bagua_lowprec_*, bagua_async_average_*, bagua_bucket_comm_register) need
 * it aligned to the element size, as their comments say.
 *
 * Threads: like MPI collectives, calls on one communicator must be made by one
 * thread at a time, in the same order on every rank. Calls on different
 * communicators may run concurrently when MPI was initialised with
 * MPI_THREAD_MULTIPLE.
 *
 * Settings come from environment variables (BAGUA_*), listed with their
 * defaults by `bagua-info` and in doc/api.md.
 */
#ifndef BAGUA_H
#define BAGUA_H

/* Consumers link MPI's C library only (pkg-config ompi-c / mpich, CMake MPI::MPI_C):
 * keep mpi.h from declaring the deprecated MPI C++ bindings, whose inline code needs
 * libmpi_cxx. For a program that includes mpi.h first, bagua's pkg-config Cflags and
 * CMake target define both macros. */
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BAGUA_API __attribute__((visibility("default")))
#else
#define BAGUA_API
#endif

#define BAGUA_VERSION_MAJOR 0
#define BAGUA_VERSION_MINOR 1
#define BAGUA_VERSION_PATCH 0

/** Status codes. Values are frozen: new codes are only ever appended. */
typedef enum {
  BAGUA_SUCCESS = 0,
  /** NULL buffer with count > 0, negative count, MPI_COMM_NULL, aliased
   *  buffers that are not MPI_IN_PLACE, out-of-range option. */
  BAGUA_ERR_INVALID_ARGUMENT = 1,
  /** The datatype is not supported by this call. */
  BAGUA_ERR_UNSUPPORTED_DATATYPE = 2,
  /** The reduction operation is not supported by this call. */
  BAGUA_ERR_UNSUPPORTED_OP = 3,
  /** A peer did not answer within BAGUA_TIMEOUT_MS (it left, crashed, or
   *  called a different collective). The communicator is then unusable. */
  BAGUA_ERR_TIMEOUT = 4,
  /** The MPI or UCX layer reported a failure. */
  BAGUA_ERR_TRANSPORT = 5,
  /** Ranks disagree on the call (count, datatype, op or algorithm, found by
   *  comparing a fingerprint before data moves; or a message's size). */
  BAGUA_ERR_MISMATCH = 6,
  /** Received bytes failed validation (corrupt or truncated encoding). */
  BAGUA_ERR_CORRUPT_DATA = 7,
  /** Allocation failed. */
  BAGUA_ERR_OUT_OF_MEMORY = 8,
  /** An earlier failure left this communicator unusable; free it. */
  BAGUA_ERR_COMM_BROKEN = 9,
  /** MPI is not initialised, or already finalised. */
  BAGUA_ERR_NOT_INITIALIZED = 10,
  /** MPI's thread level is too low for the requested mode. */
  BAGUA_ERR_THREAD_LEVEL = 11,
  /** A bug in bagua: please report it. */
  BAGUA_ERR_INTERNAL = 12,
  /** The build lacks the requested feature (CUDA, UCX). */
  BAGUA_ERR_NOT_AVAILABLE = 13
} bagua_status_t;

/** A static, human-readable name of a status code. Never returns NULL. */
BAGUA_API const char *bagua_error_string(int status);

/** The detailed message of the last failed call made by this thread (which
 *  argument, which peer, which value), or "" if none. Valid until the next
 *  bagua call on this thread. */
BAGUA_API const char *bagua_last_error(void);

/** Version "MAJOR.MINOR.PATCH". */
BAGUA_API const char *bagua_version_string(void);

/**
 * Releases bagua's state on every communicator, as freeing each communicator
 * would, and stops the threads that state runs: a partial-reduce controller
 * rank first waits (up to BAGUA_TIMEOUT_MS) until every rank has left
 * (bagua_partial_leave, or this call on that rank), the other ranks leave.
 * Then it frees bagua's datatypes and op (BAGUA_FLOAT16, BAGUA_BFLOAT16,
 * BAGUA_AVG) as MPI_Finalize would. Call it on every rank before
 * MPI_Finalize, with no bagua call in flight and every bucket communicator
 * and asynchronous averager destroyed. Without it the same release runs
 * inside MPI_Finalize, which is too late with MPICH: its MPI_Finalize stops
 * locking for other threads before bagua's release runs, so a partial-reduce
 * controller thread still polling then can leave MPICH's lock held and
 * MPI_Finalize aborts ("pthread_mutex_destroy: Device or resource busy").
 * A later bagua call starts afresh (its first call on a communicator is
 * collective again); calling it twice is harmless.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_NOT_INITIALIZED (before MPI_Init or after
 *         MPI_Finalize).
 */
BAGUA_API int bagua_finalize(void);

/* ----------------------------------------------------------------------------
 * Communicators without an MPI launcher (doc/transports.md, "Without an MPI
 * launcher"). Processes started by another launcher (torchrun), each a
 * one-rank MPI world of its own (MPI_Init without mpirun), form a bagua
 * communicator from an out-of-band allgather the caller provides.
 * ------------------------------------------------------------------------- */

/** The group and its out-of-band allgather; fill with BAGUA_OOB_INITIALIZER,
 *  then set every field. Fields are only ever appended; struct_size tells the
 *  library which ones the caller knows. */
typedef struct bagua_oob {
  /** sizeof(bagua_oob) as the caller was compiled. */
  size_t struct_size;
  /** This process's rank in the group, 0 <= rank < size; the group's size. */
  int rank, size;
  /** Collective over the group: gathers every rank's `bytes` bytes from
   *  `send` into `recv` (size * bytes, rank order). Returns 0 on success,
   *  nonzero on failure. Called only during bagua_comm_create_oob, with the
   *  same `bytes` on every rank. */
  int (*allgather)(const void *send, void *recv, size_t bytes, void *ctx);
  /** Passed to allgather. */
  void *ctx;
} bagua_oob;

/** Static initializer: rank -1 and no callback, to be set by the caller. */
#define BAGUA_OOB_INITIALIZER \
  { sizeof(bagua_oob), -1, 0, NULL, NULL }

/**
 * Forms a communicator of the oob group (collective over it): bagua agrees
 * on its BAGUA_* settings and exchanges UCX worker addresses through
 * oob->allgather, and returns a new MPI handle (a duplicate of
 * MPI_COMM_SELF) carrying that state. bagua calls on *comm run over the
 * group, always over the ucx transport: the allreduces (exact and
 * compressed), the nonblocking allreduces, decentralized and low-precision
 * averaging, asynchronous averaging, bucketed communicators, partial reduce.
 * Hierarchical mode (BAGUA_HIERARCHICAL), whose nodes come from MPI, returns
 * BAGUA_ERR_INVALID_ARGUMENT saying so. MPI's own calls on *comm see
 * one rank (MPI_Comm_size gives 1), as do communicators MPI makes from it.
 * MPI must be initialised (MPI_THREAD_MULTIPLE for the nonblocking calls
 * and partial reduce); settings must be identical on every rank.
 *
 * @param oob  the group; read only during this call.
 * @param comm output: the handle (MPI_COMM_NULL on failure); free it with
 *             bagua_comm_free (after bagua_finalize too).
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL oob or comm,
 *         struct_size not one this library knows, size < 1, rank outside
 *         [0, size), NULL allgather, ranks that share an oob->rank or a
 *         callback that gathers out of rank order), BAGUA_ERR_TRANSPORT
 *         (the callback returned nonzero, UCX failed), BAGUA_ERR_MISMATCH
 *         (BAGUA_* settings differ across ranks),
 *         BAGUA_ERR_NOT_AVAILABLE (bagua built without UCX),
 *         BAGUA_ERR_NOT_INITIALIZED.
 */
BAGUA_API int bagua_comm_create_oob(const bagua_oob *oob, MPI_Comm *comm);

/**
 * Frees a communicator made by bagua_comm_create_oob and its state (local;
 * no bagua call may be in flight on it), and sets *comm to MPI_COMM_NULL.
 * NULL or a pointer to MPI_COMM_NULL is a no-op.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (a communicator that
 *         bagua_comm_create_oob did not make), BAGUA_ERR_NOT_INITIALIZED.
 */
BAGUA_API int bagua_comm_free(MPI_Comm *comm);

/* ----------------------------------------------------------------------------
 * Datatypes and operations the library provides (MPI has no standard ones).
 * They are real MPI handles: valid between MPI_Init and MPI_Finalize, usable
 * with MPI calls too, freed by the library at MPI_Finalize.
 * ------------------------------------------------------------------------- */

/** IEEE 754 binary16 (2 bytes). Returns MPI_DATATYPE_NULL before MPI_Init. */
BAGUA_API MPI_Datatype bagua_type_float16(void);
/** bfloat16 (upper 2 bytes of a float32). MPI_DATATYPE_NULL before MPI_Init. */
BAGUA_API MPI_Datatype bagua_type_bfloat16(void);
/** Average: bagua reductions divide the sum by the number of contributors.
 *  Passed to MPI's own reductions it acts as a sum (an MPI_User_function
 *  cannot know the group size); it supports float, double, float16 and
 *  bfloat16 there. Returns MPI_OP_NULL before MPI_Init. */
BAGUA_API MPI_Op bagua_op_avg(void);

#define BAGUA_FLOAT16 (bagua_type_float16())
#define BAGUA_BFLOAT16 (bagua_type_bfloat16())
#define BAGUA_AVG (bagua_op_avg())

/** What crosses the wire in an allreduce: the one list of algorithms (the
 *  library's wire registry), used by bagua_allreduce_alg,
 *  bagua_iallreduce_alg, the bucketed communicator and bagua_allreduce_bytes.
 *  Values run from 0 without gaps: `for (a = 0; bagua_algorithm_name(a); ++a)`
 *  lists them, so a consumer need not name any. Which datatypes, ops and
 *  memory types each accepts: `bagua-info --support` (doc/api.md),
 *  bagua_algorithm_offered. */
typedef enum {
  /** Exact elements (bagua_allreduce). */
  BAGUA_ALGORITHM_EXACT = 0,
  /** 8-bit min-max blocks (bagua_allreduce_q8). */
  BAGUA_ALGORITHM_Q8 = 1,
  /** float16 with a 1/n prescale (bagua_allreduce_fp16). */
  BAGUA_ALGORITHM_FP16 = 2,
  /** bfloat16 (bagua_allreduce_bf16). */
  BAGUA_ALGORITHM_BF16 = 3,
  /** 1-bit scaled sign with error feedback (bagua_allreduce_sign). */
  BAGUA_ALGORITHM_SIGN = 4,
  /** 4-bit min-max blocks (bagua_allreduce_q4). */
  BAGUA_ALGORITHM_Q4 = 5,
  /** 8-bit float (e4m3) blocks of 32 with a power-of-two scale, as OCP's
   *  microscaling MXFP8 (bagua_allreduce_alg). */
  BAGUA_ALGORITHM_MXFP8 = 6,
  /** Not a value: makes every int a valid value of the type, so an
   *  out-of-range argument is reported as an error, not undefined. */
  BAGUA_ALGORITHM_RANGE_ = 0x7fffffff
} bagua_algorithm;

/**
 * The wire name of an algorithm: "exact", "q8", "q4", "fp16", "bf16",
 * "sign", "mxfp8" (the names bagua-info, BAGUA_PMPI, bagua_torch and the
 * trainer use). Returns NULL for a value that is not a bagua_algorithm.
 * Local.
 */
BAGUA_API const char *bagua_algorithm_name(bagua_algorithm algorithm);

/**
 * 1 when the calls of `family` offer `algorithm`, else 0 (also for an
 * unknown algorithm or family). Families are named as the first column of
 * `bagua-info --support`: "allreduce", "iallreduce", "bucket", "partial",
 * "decentralized", "lowprec", "async", "reduce_scatter_block". Local.
 */
BAGUA_API int bagua_algorithm_offered(bagua_algorithm algorithm, const char *family);

/**
 * 1 when `algorithm` keeps error-feedback state per buffer, so its calls
 * take a state object (sign: bagua_allreduce_sign with a
 * bagua_sign_state_t) and bagua_allreduce_alg refuses it; else 0. Local.
 */
BAGUA_API int bagua_algorithm_has_state(bagua_algorithm algorithm);

/**
 * The algorithm whose wire name (bagua_algorithm_name) is `name`, exactly.
 * Local.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL name or out, or an
 *         unknown name; the message lists the names).
 */
BAGUA_API int bagua_algorithm_from_name(const char *name, bagua_algorithm *out);

/**
 * The bytes this rank sends in one flat allreduce of `count` elements of
 * `datatype` on `comm` with `algorithm`, as the selection policy would run it
 * now (BAGUA_ALLREDUCE_SCHEDULE, BAGUA_RING_THRESHOLD, BAGUA_CODEC_BLOCK, BAGUA_Q4_BLOCK,
 * BAGUA_SEGMENT_BYTES; the schedule of bucketed and nonblocking calls, and
 * of the blocking calls without BAGUA_HIERARCHICAL). Every header and pad
 * counted; 0 with one rank. Local (not collective).
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (negative count, NULL
 *         bytes, MPI_COMM_NULL, unknown algorithm),
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE, BAGUA_ERR_NOT_INITIALIZED.
 */
BAGUA_API int bagua_allreduce_bytes(bagua_algorithm algorithm, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Comm comm, MPI_Count *bytes);

/**
 * The size of one message of `count` elements of `datatype` in `algorithm`'s
 * wire format (BAGUA_CODEC_BLOCK; headers and pads counted): what a
 * decentralized or low-precision step sends to each peer. Local.
 * @return as bagua_allreduce_bytes.
 */
BAGUA_API int bagua_encoded_bytes(bagua_algorithm algorithm, MPI_Count count, MPI_Datatype datatype,
                                  MPI_Count *bytes);

/* ----------------------------------------------------------------------------
 * Exact collectives
 * ------------------------------------------------------------------------- */

/**
 * Exact allreduce, arguments as MPI_Allreduce.
 *
 * @param sendbuf  input, count elements, or MPI_IN_PLACE (input taken from
 *                 recvbuf). May be NULL only when count == 0.
 * @param recvbuf  output, count elements; must not overlap sendbuf unless
 *                 sendbuf is MPI_IN_PLACE.
 * @param count    number of elements, >= 0, equal on every rank.
 * @param datatype MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16.
 * @param op       MPI_SUM, MPI_MAX, MPI_MIN or BAGUA_AVG.
 * @param comm     any intra-communicator.
 *
 * Every rank receives bit-identical results. Half-precision types are
 * combined in float32 and rounded to nearest-even after each addition.
 * Large messages use a pipelined ring (bandwidth-optimal), small ones
 * recursive doubling (latency-optimal); BAGUA_ALLREDUCE_SCHEDULE and
 * BAGUA_RING_THRESHOLD select. Blocking; thread rules as above.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT,
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE, BAGUA_ERR_UNSUPPORTED_OP,
 *         BAGUA_ERR_TIMEOUT, BAGUA_ERR_MISMATCH, BAGUA_ERR_TRANSPORT,
 *         BAGUA_ERR_COMM_BROKEN, BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm);

/**
 * Allreduce with the algorithm chosen at run time: the same call as
 * bagua_allreduce (BAGUA_ALGORITHM_EXACT), bagua_allreduce_q8, _q4, _fp16 or
 * _bf16, with their datatypes, ops, guarantees and errors. Every rank must
 * pass the same algorithm (a different one is BAGUA_ERR_MISMATCH).
 * BAGUA_ALGORITHM_SIGN is refused (BAGUA_ERR_INVALID_ARGUMENT): it needs its
 * error-feedback state, see bagua_allreduce_sign.
 */
BAGUA_API int bagua_allreduce_alg(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  bagua_algorithm algorithm);
/** bagua_allreduce_alg with count as MPI_Count (large-count variant). */
BAGUA_API int bagua_allreduce_alg_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_algorithm algorithm);

/* Large-count variants (MPI-4 style): count as MPI_Count, otherwise the same
 * as the call without _c. Buffers above INT_MAX bytes or elements work. */
BAGUA_API int bagua_allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BAGUA_API int bagua_allreduce_q8_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BAGUA_API int bagua_allreduce_q4_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BAGUA_API int bagua_allreduce_fp16_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
BAGUA_API int bagua_allreduce_bf16_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* ----------------------------------------------------------------------------
 * Data-movement collectives and point-to-point messages
 * ------------------------------------------------------------------------- */
/* @section collectives */

/*
 * Exact, MPI-shaped data movement that runs entirely over bagua's own
 * transport of the communicator (BAGUA_TRANSPORT), with the rank and size of
 * the communicator's bagua state: bytes move only through that transport
 * (point-to-point on bagua's duplicate of comm, or UCX), never through MPI
 * collectives or MPI_Comm_rank / MPI_Comm_size on comm. Common rules of the
 * calls below:
 *
 * - Arguments as their MPI counterparts (MPI_Barrier, MPI_Bcast, ...),
 *   significant on the same ranks; MPI_IN_PLACE where MPI allows it
 *   (bagua_allgather, bagua_alltoall, bagua_reduce_scatter_block, the
 *   root's sendbuf of bagua_gather and recvbuf of bagua_scatter).
 * - Datatypes: contiguous predefined ones (MPI_INT, MPI_BYTE, MPI_DOUBLE,
 *   ...) and BAGUA_FLOAT16 / BAGUA_BFLOAT16; derived datatypes return
 *   BAGUA_ERR_INVALID_ARGUMENT. Where a call has send and receive types,
 *   sendcount x sendtype and recvcount x recvtype must be the same number
 *   of bytes (BAGUA_ERR_INVALID_ARGUMENT otherwise). Host memory only.
 * - Before data moves the ranks compare a fingerprint of the call
 *   (collective, bytes per rank, datatype, op, root; BAGUA_CHECK_CALLS):
 *   ranks whose calls differ all return BAGUA_ERR_MISMATCH and no buffer is
 *   written past its end.
 * - Blocking; bounded by BAGUA_TIMEOUT_MS; a timeout, transport failure or
 *   mismatch breaks the communicator (BAGUA_ERR_COMM_BROKEN afterwards), as
 *   for every bagua collective. Thread rules as bagua_allreduce.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL buffer with data,
 *         negative count, root or peer out of range, MPI_IN_PLACE where MPI
 *         does not allow it, overlapping buffers, unsupported datatype,
 *         device memory), BAGUA_ERR_TIMEOUT, BAGUA_ERR_MISMATCH,
 *         BAGUA_ERR_TRANSPORT, BAGUA_ERR_COMM_BROKEN,
 *         BAGUA_ERR_OUT_OF_MEMORY, BAGUA_ERR_NOT_INITIALIZED.
 */

/** Barrier (dissemination: ceil(log2 n) rounds of one-byte messages). */
BAGUA_API int bagua_barrier(MPI_Comm comm);

/** Broadcast of count elements from root (binomial tree). */
BAGUA_API int bagua_bcast(void *buf, int count, MPI_Datatype datatype, int root, MPI_Comm comm);

/** Allgather: block i of recvbuf (recvcount elements) is rank i's sendbuf
 *  (ring, n - 1 steps). MPI_IN_PLACE as sendbuf: this rank's block is
 *  already in recvbuf. */
BAGUA_API int bagua_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/** Gather to root: block i of root's recvbuf is rank i's sendbuf (each rank
 *  sends to root directly). MPI_IN_PLACE as root's sendbuf: its block is
 *  already in recvbuf. */
BAGUA_API int bagua_gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);

/** Scatter from root: rank i's recvbuf receives block i of root's sendbuf
 *  (root sends to each rank directly). MPI_IN_PLACE as root's recvbuf: its
 *  block stays in sendbuf. */
BAGUA_API int bagua_scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm);

/** All-to-all: block j of rank i's recvbuf is block i of rank j's sendbuf
 *  (pairwise exchange, n - 1 steps). MPI_IN_PLACE as sendbuf: the blocks are
 *  taken from recvbuf (copied once first). */
BAGUA_API int bagua_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/**
 * Reduce-scatter of equal blocks: sendbuf holds n blocks of recvcount
 * elements; rank i's recvbuf receives block i of the elementwise reduction
 * over the ranks (the exact allreduce's ring, its reduce-scatter phase).
 * MPI_IN_PLACE as sendbuf: the input is recvbuf's n blocks and the result
 * is written to its first block. Datatypes and ops of bagua_allreduce
 * (MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16, BAGUA_BFLOAT16; MPI_SUM, MPI_MAX,
 * MPI_MIN, BAGUA_AVG), with its arithmetic, and MPI_PROD; others return
 * BAGUA_ERR_UNSUPPORTED_DATATYPE or BAGUA_ERR_UNSUPPORTED_OP.
 */
BAGUA_API int bagua_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/**
 * bagua_reduce_scatter_block with the wire format `algorithm` (those that
 * bagua_algorithm_offered lists for "reduce_scatter_block"). EXACT is
 * bagua_reduce_scatter_block. A codec runs ByteGrad's first phase alone:
 * each rank encodes block j of its input and sends it to rank j, which adds
 * the decoded blocks to its own exact block in float32 (rank order) and
 * stores the sum (BAGUA_AVG: divided by the ranks) in recvbuf; every
 * rank's input crosses the wire once, (n - 1) / n of it in the codec's
 * format, and no result is re-encoded. Codec datatypes (MPI_FLOAT,
 * BAGUA_FLOAT16, BAGUA_BFLOAT16), MPI_SUM and BAGUA_AVG, host buffers.
 * In place as bagua_reduce_scatter_block.
 */
BAGUA_API int bagua_reduce_scatter_block_alg(const void *sendbuf, void *recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                             bagua_algorithm algorithm);

/**
 * Blocking point-to-point messages, arguments as MPI_Send / MPI_Recv
 * without the status. tag in [0, 32767], on a tag space of their own that
 * collectives never match. A receive takes the earliest message from
 * source with its tag; messages of other tags that arrive first wait in
 * bagua until received. dest / source must be another rank of comm
 * (MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_PROC_NULL and messages to oneself are
 * BAGUA_ERR_INVALID_ARGUMENT). The receive's count x datatype must be the
 * message's size exactly (BAGUA_ERR_MISMATCH otherwise, which breaks the
 * communicator). A receive that gets no message within BAGUA_TIMEOUT_MS
 * returns BAGUA_ERR_TIMEOUT.
 */
BAGUA_API int bagua_send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                         MPI_Comm comm);
BAGUA_API int bagua_recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm);

/* ----------------------------------------------------------------------------
 * Compressed allreduce (q8, q4, fp16/bf16 cast, 1-bit sign)
 * ------------------------------------------------------------------------- */
/* @section compressed */

/**
 * 8-bit compressed allreduce (ByteGrad), arguments as MPI_Allreduce.
 *
 * Each rank's buffer is cut into n chunks; chunk c of every rank is
 * quantized (min-max, 8 bits, blocks of BAGUA_CODEC_BLOCK elements, header
 * min/max in float32) and sent to rank c, which sums the n contributions in
 * float32 (its own exactly), re-quantizes the sum and sends it to everybody.
 * About 1 byte per element crosses the network instead of 4 (float32).
 *
 * @param sendbuf  input, count elements, or MPI_IN_PLACE (input taken from
 *                 recvbuf). May be NULL only when count == 0.
 * @param recvbuf  output, count elements; must not overlap sendbuf unless
 *                 sendbuf is MPI_IN_PLACE.
 * @param count    number of elements, >= 0, equal on every rank.
 * @param datatype MPI_FLOAT, BAGUA_FLOAT16 or BAGUA_BFLOAT16 (host or CUDA
 *                 device memory, see bagua_set_cuda_stream).
 * @param op       MPI_SUM or BAGUA_AVG.
 * @param comm     any intra-communicator.
 *
 * Guarantees: every rank receives bit-identical results. Each element is
 * quantized at most twice: |result - exact| <= sum over the other ranks of
 * (block range of their input) / 510 + (block range of the reduced sum) / 510
 * (divided by n for BAGUA_AVG), plus the rounding of the output type. A NaN
 * or Inf in an input block makes the whole block NaN in the result. With one
 * rank the result is exact. BAGUA_HIERARCHICAL=1 reduces exactly inside each
 * node first (doc/compressed.md). Blocking; thread rules as bagua_allreduce.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT,
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE (e.g. MPI_INT, MPI_DOUBLE),
 *         BAGUA_ERR_UNSUPPORTED_OP (e.g. MPI_MAX), BAGUA_ERR_CORRUPT_DATA (a
 *         peer's bytes failed validation), BAGUA_ERR_TIMEOUT,
 *         BAGUA_ERR_MISMATCH, BAGUA_ERR_TRANSPORT, BAGUA_ERR_COMM_BROKEN,
 *         BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_allreduce_q8(const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/**
 * 4-bit compressed allreduce: bagua_allreduce_q8 with 4 bits per element
 * (15 steps per block range) in blocks of BAGUA_Q4_BLOCK elements (default
 * 256), so about 0.56 bytes per element cross the network. Same schedule,
 * arguments, datatypes, ops, memory types and errors as bagua_allreduce_q8.
 *
 * Guarantees: every rank receives bit-identical results. Each element is
 * quantized at most twice: |result - exact| <= sum over the other ranks of
 * (block range of their input) / 30 + (block range of the reduced sum) / 30
 * (divided by n for BAGUA_AVG), plus float rounding and the rounding of the
 * output type. A NaN or Inf in an input block makes the whole block NaN in
 * the result. With one rank the result is exact.
 */
BAGUA_API int bagua_allreduce_q4(const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/**
 * Allreduce with values sent as IEEE float16 (2 bytes per element), same
 * schedule, arguments, datatypes, ops and errors as bagua_allreduce_q8.
 *
 * Overflow-safe: values are multiplied by 1/n before each cast to float16 and
 * by n after it, and sums are accumulated in float32, so a sum of n values
 * that each fit float16 cannot overflow on the wire. Each element is rounded
 * to float16 at most twice (relative error about 2^-11 per rounding; values
 * below about n * 6e-8 lose precision to float16 subnormals). Every rank
 * receives bit-identical results.
 */
BAGUA_API int bagua_allreduce_fp16(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/**
 * Allreduce with values sent as bfloat16 (2 bytes per element, float32's
 * exponent range, 8 bits of mantissa): same schedule, arguments, datatypes,
 * ops and errors as bagua_allreduce_fp16, without its prescale (bfloat16
 * cannot overflow where float32 does not). Each element is rounded to
 * bfloat16 at most twice (relative error about 2^-8 per rounding). Use it
 * for bfloat16 data, which bagua_allreduce_fp16 would squeeze into float16's
 * range. Every rank receives bit-identical results.
 */
BAGUA_API int bagua_allreduce_bf16(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/** Error-feedback state of bagua_allreduce_sign (opaque). */
typedef struct bagua_sign_state_s *bagua_sign_state_t;

/**
 * Creates the error-feedback state of bagua_allreduce_sign for buffers of
 * `count` elements on `comm`: two float32 residuals (8 bytes per element),
 * initially zero. Local (not collective); needs MPI initialised.
 *
 * Lifetime: the caller owns the state. Use it only with the same comm and
 * count, for one buffer (e.g. one gradient bucket) across iterations; free it
 * with bagua_sign_state_destroy, before or after MPI_Finalize. One call at a
 * time per state: a call on a state another call holds (a nonblocking call
 * not yet complete, a call on another thread) returns
 * BAGUA_ERR_INVALID_ARGUMENT.
 *
 * @param count >= 0.
 * @param comm  the intra-communicator the state will be used with.
 * @param state output: the new state.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (negative count, NULL
 *         state, MPI_COMM_NULL), BAGUA_ERR_NOT_INITIALIZED,
 *         BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_sign_state_create(int count, MPI_Comm comm, bagua_sign_state_t *state);

/** Frees a state and sets *state to NULL; NULL or a pointer to NULL is a
 *  no-op. @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (a nonblocking
 *  call holds the state: nothing is freed). */
BAGUA_API int bagua_sign_state_destroy(bagua_sign_state_t *state);

/**
 * Copies a state's error feedback out (save) or in (load), for checkpoints:
 * its two float32 residuals one after the other, `count` = 2 * the state's
 * count elements. A loaded state continues exactly where the saved one
 * stopped (same comm size and count). Local. Not for a state whose
 * residuals a blocking call on device buffers put in device memory, nor
 * while a nonblocking call holds it (BAGUA_ERR_INVALID_ARGUMENT).
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL state or buffer,
 *         a count other than twice the state's), BAGUA_ERR_NOT_AVAILABLE
 *         (device residuals).
 */
BAGUA_API int bagua_sign_state_save(bagua_sign_state_t state, float *residuals, MPI_Count count);
BAGUA_API int bagua_sign_state_load(bagua_sign_state_t state, const float *residuals,
                                    MPI_Count count);

/**
 * 1-bit allreduce with error feedback (scaled sign: 1 bit per element plus a
 * float32 scale, the block's mean |x|, per BAGUA_CODEC_BLOCK elements).
 * Arguments as bagua_allreduce_q8, plus the state created for this comm and
 * count. Each rank sends sign(input + residual) and keeps the quantization
 * error in the state for the next call; the owner of each chunk does the same
 * for the reduced sum. A single result is coarse, but the error does not
 * accumulate: the sum of the results over many calls tracks the sum of the
 * exact results. Every rank receives bit-identical results.
 *
 * The state keeps its residuals where its first call's buffers are (host,
 * or CUDA device memory) and then serves calls of that memory type only.
 *
 * A host input holding a NaN or an infinity on any rank is refused on every
 * rank before the residuals change (doc/faults.md).
 *
 * @return as bagua_allreduce_q8; BAGUA_ERR_INVALID_ARGUMENT also when state is
 *         NULL, was created for another comm or count, or holds its residuals
 *         in the other memory type, or when a rank's input is not finite.
 */
BAGUA_API int bagua_allreduce_sign(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   bagua_sign_state_t state);

/**
 * Sets the CUDA stream on which the calls on comm run their kernels and
 * copies for CUDA device buffers.
 *
 * Device buffers are recognised from the pointer (cudaPointerGetAttributes;
 * managed memory counts as host memory). sendbuf and recvbuf must both be
 * device buffers or both host buffers. Every blocking collective takes them,
 * and so do the nonblocking calls and bucket tensors
 * (bagua_bucket_comm_register). q8, q4, fp16, bf16
 * and sign allreduce encode and decode with CUDA kernels on this stream, after
 * the work already queued on it, and copy only encoded bytes to the host for
 * the transport. The other calls copy the buffer into page-locked scratch
 * on this stream, run on the host, and copy the result back. A blocking call
 * returns after the results are written (the stream is synchronized);
 * nonblocking calls and buckets take their input once the work queued on
 * the stream before them is done (a CUDA event). Asynchronous averaging
 * stages a device buffer on a stream of its thread's own, not this one
 * (bagua_async_average_create). Scratch is kept per communicator: a
 * repeated call allocates nothing. See doc/compressed.md, "Device buffers".
 *
 * @param comm   the communicator the stream is for (not MPI_COMM_NULL).
 * @param stream a cudaStream_t, or NULL for the default stream (the
 *               default). bagua does not own it: set NULL again before
 *               destroying the stream. The setting is an attribute of comm:
 *               freeing comm drops it, and MPI_Comm_dup does not copy it.
 *
 * Local (not collective); from several threads at once under
 * MPI_THREAD_MULTIPLE. A bucketed communicator keeps the stream its comm had
 * when it was created.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (comm is MPI_COMM_NULL),
 *         BAGUA_ERR_NOT_AVAILABLE (bagua built without CUDA),
 *         BAGUA_ERR_NOT_INITIALIZED.
 */
BAGUA_API int bagua_set_cuda_stream(MPI_Comm comm, void *stream);

/* ----------------------------------------------------------------------------
 * Partial reduce: averaging among the first P ready ranks
 * ------------------------------------------------------------------------- */
/* @section partial */

/** Most members a bagua_group_info lists; larger groups report their true
 *  size with the first BAGUA_GROUP_INFO_MAX_MEMBERS members listed. */
#define BAGUA_GROUP_INFO_MAX_MEMBERS 64

/** The group a bagua_partial_reduce call averaged in. All members of a group
 *  receive identical info. */
typedef struct bagua_group_info {
  /** Sequence number assigned by the controller: 0, 1, 2, ... per communicator. */
  long long group_id;
  /** Number of members. */
  int size;
  /** Entries filled in the arrays below: min(size, BAGUA_GROUP_INFO_MAX_MEMBERS). */
  int listed;
  /** 1 when the controller formed this group to reconnect the averaging graph
   *  (it waited for members of every component, up to
   *  BAGUA_PARTIAL_DEADLINE_MAX_MS). */
  int bridging;
  /** Members' ranks in comm, ascending. */
  int members[BAGUA_GROUP_INFO_MAX_MEMBERS];
  /** Each member's iteration: its number of earlier bagua_partial_reduce calls on comm. */
  long long iterations[BAGUA_GROUP_INFO_MAX_MEMBERS];
  /** Each member's staleness: the group's largest iteration minus its own. */
  long long staleness[BAGUA_GROUP_INFO_MAX_MEMBERS];
  /** Each member's averaging weight (the weights sum to 1). */
  double weights[BAGUA_GROUP_INFO_MAX_MEMBERS];
  /** Bytes this rank sent in the group's average (every header counted). */
  long long bytes_sent;
} bagua_group_info;

/**
 * Partial reduce: "this rank is ready with sendbuf". The first ranks to be
 * ready form a group of group_size (P) members, average their buffers, and
 * each member returns with the group's average in recvbuf; a slow rank joins
 * a later group instead of delaying everyone. Arguments as MPI_Allreduce with
 * the op replaced by group_size, plus the info output.
 *
 * A controller thread on rank BAGUA_PARTIAL_CONTROLLER forms groups in
 * arrival order: a group closes when P ranks are ready, or
 * BAGUA_PARTIAL_DEADLINE_MS after its first arrival with fewer (the deadline
 * adapts, see doc/partial.md); within every BAGUA_PARTIAL_TAU groups (0, the
 * default: sized to the ranks and P, see doc/partial.md) all ranks
 * become connected (a bridging group then waits for ranks of every component,
 * and may hold more than P members) as long as every rank keeps calling; a
 * bridging group closes with the ranks it has BAGUA_PARTIAL_DEADLINE_MAX_MS
 * after its first arrival, so ranks that stopped calling without leaving
 * never hold the others for longer. Ranks that called bagua_partial_leave
 * are not waited for until their next bagua_partial_reduce: P is capped at
 * the number of ranks taking part.
 *
 * @param sendbuf    input, count elements, or MPI_IN_PLACE (input taken from
 *                   recvbuf). May be NULL only when count == 0.
 * @param recvbuf    output, count elements; must not overlap sendbuf unless
 *                   sendbuf is MPI_IN_PLACE.
 * @param count      number of elements, >= 0; equal on all ranks.
 * @param datatype   MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16.
 * @param group_size P in [1, size of comm], or 0 for BAGUA_PARTIAL_GROUP_SIZE
 *                   (default: half the ranks, rounded up). A group takes the P
 *                   of its first arrival.
 * @param comm       any intra-communicator.
 * @param info       output, may be NULL: the group this call averaged in.
 *
 * Weights: BAGUA_PARTIAL_WEIGHTS=uniform (default) gives every member 1/size,
 * computed as the exact sum divided once; staleness gives member i a weight
 * proportional to 1 / (1 + staleness_i). Half types are combined in float32.
 *
 * The first bagua_partial_reduce or bagua_partial_leave on a communicator is
 * collective (it sets up the controller's communicator); later calls are
 * not: ranks call at their own pace and may make different numbers of calls.
 * Needs MPI_THREAD_MULTIPLE (the controller thread uses MPI). Blocking; calls
 * on one communicator must come from one thread at a time.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT,
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE,
 *         BAGUA_ERR_THREAD_LEVEL, BAGUA_ERR_TIMEOUT (no group within
 *         BAGUA_TIMEOUT_MS, or a member did not answer), BAGUA_ERR_MISMATCH,
 *         BAGUA_ERR_TRANSPORT, BAGUA_ERR_COMM_BROKEN, BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_partial_reduce(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, int group_size, MPI_Comm comm,
                                   bagua_group_info *info);

/**
 * Tells the controller this rank makes no bagua_partial_reduce calls on comm
 * until its next one, so no group waits for it meanwhile: call it before the
 * rank enters anything that other ranks' partial calls must not wait on (an
 * evaluation with its own collectives, a checkpoint, the end of training). The
 * next bagua_partial_reduce takes part again; ranks come back one by one, so
 * the first groups after all ranks left may be smaller than P (a rank back
 * early does not wait for ranks the controller still counts as left). Not
 * collective (except as the first partial call on comm, see above); returns
 * once the controller has been told. Freeing comm or MPI_Finalize leaves
 * implicitly; on the controller rank it then waits (up to BAGUA_TIMEOUT_MS)
 * until every rank has left. Calling it twice without a bagua_partial_reduce
 * in between is an error.
 *
 * @param comm any intra-communicator.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT, BAGUA_ERR_THREAD_LEVEL,
 *         BAGUA_ERR_TIMEOUT, BAGUA_ERR_TRANSPORT, BAGUA_ERR_COMM_BROKEN.
 */
BAGUA_API int bagua_partial_leave(MPI_Comm comm);

/* ----------------------------------------------------------------------------
 * Decentralized and asynchronous averaging
 * ------------------------------------------------------------------------- */
/* @section decentralized */

/** Whom a rank averages with in bagua_decentralized_average. */
typedef enum {
  /** Every rank: the exact average over the communicator (an allreduce). */
  BAGUA_PEER_ALL = 0,
  /** One partner per communication round, changing every round. Even n: the
   *  reference schedule (rank r < n/2 meets n/2 + (r + s) mod n/2 in round s;
   *  over n/2 rounds every lower-half rank meets every upper-half rank).
   *  Odd n: round-robin, rank r meets (s - r) mod n, so (n-1)/2 pairs per
   *  round, the rank with 2r = s (mod n) sits out (keeps its value), and
   *  every pair meets once in n consecutive rounds. Result (a + b) / 2. */
  BAGUA_PEER_SHIFT_ONE = 1,
  /** Left and right neighbours (r - 1, r + 1 mod n): the average of the
   *  distinct ranks among {r - 1, r, r + 1}, i.e. 1/3 each for n >= 3, 1/2
   *  each for n == 2, the value itself for n == 1. */
  BAGUA_PEER_RING = 2,
  /** Not a value: makes every int a valid value of the type, so an
   *  out-of-range argument is reported as an error, not undefined. */
  BAGUA_PEER_MODE_RANGE_ = 0x7fffffff
} bagua_peer_mode;

/**
 * Decentralized averaging of model weights with a few peers (synchronous).
 *
 * A rank's output is the average of its input and its peers' inputs for this
 * round (see bagua_peer_mode). Communication happens only when
 * step % interval == 0 (round s = step / interval drives the shift_one
 * pairing); on other steps the call copies sendbuf to recvbuf (nothing if
 * MPI_IN_PLACE) and returns at once without communicating: local steps in
 * between, as in local SGD.
 *
 * Arithmetic: the contributions are summed in ascending rank order in float32
 * (float64 for MPI_DOUBLE), divided by their number and rounded once to the
 * element type. BAGUA_PEER_ALL is bagua_allreduce with BAGUA_AVG. Two
 * shift_one partners get bit-identical results.
 *
 * @param sendbuf  input, count elements, or MPI_IN_PLACE (input taken from
 *                 recvbuf). May be NULL only when count == 0.
 * @param recvbuf  output, count elements; must not overlap sendbuf unless
 *                 sendbuf is MPI_IN_PLACE.
 * @param count    number of elements, >= 0, equal on every rank.
 * @param datatype MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16.
 * @param mode     BAGUA_PEER_ALL, BAGUA_PEER_SHIFT_ONE or BAGUA_PEER_RING,
 *                 equal on every rank.
 * @param step     the caller's iteration number, >= 0, equal on every rank
 *                 (explicit, so the schedule is deterministic and restartable).
 * @param interval communication interval k >= 1 (1: average every step).
 * @param comm     any intra-communicator.
 *
 * Collective over comm when it communicates (every rank calls with the same
 * step); blocking; thread rules as for bagua_allreduce.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (buffers, count, mode,
 *         step, interval, comm), BAGUA_ERR_UNSUPPORTED_DATATYPE,
 *         BAGUA_ERR_TIMEOUT, BAGUA_ERR_MISMATCH, BAGUA_ERR_TRANSPORT,
 *         BAGUA_ERR_COMM_BROKEN, BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_decentralized_average(const void *sendbuf, void *recvbuf, int count,
                                          MPI_Datatype datatype, bagua_peer_mode mode, int step,
                                          int interval, MPI_Comm comm);

/** State of low-precision decentralized averaging for one buffer. */
typedef struct bagua_lowprec_s *bagua_lowprec_t;

/**
 * Creates the state of low-precision (q8) ring averaging for one buffer
 * (collective over comm).
 *
 * Each rank keeps float32 replicas: w (its own last communicated weights) and
 * L, R (copies of its left and right neighbours' w). Creation exchanges the
 * initial weights exactly, so rank r's w starts bit-identical to its left
 * neighbour's R and its right neighbour's L, and every step keeps it so.
 *
 * @param buf      the initial weights, count elements (read only here),
 *                 aligned to the element size. May be NULL only when
 *                 count == 0.
 * @param count    number of elements, >= 0, equal on every rank.
 * @param datatype MPI_FLOAT, BAGUA_FLOAT16 or BAGUA_BFLOAT16 (the q8 codec's
 *                 types; MPI_DOUBLE is refused).
 * @param interval communication interval k >= 1: bagua_lowprec_step
 *                 communicates on its 1st, (k+1)th, (2k+1)th... call and
 *                 leaves buf alone on the others.
 * @param comm     any intra-communicator; must stay valid until
 *                 bagua_lowprec_destroy.
 * @param state    out: the new state (NULL on failure).
 *
 * Memory: 3 * count float32 replicas plus two q8 messages per rank.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (also a buf holding a NaN
 *         or an infinity on some rank: refused on every rank),
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE, BAGUA_ERR_TIMEOUT,
 *         BAGUA_ERR_MISMATCH, BAGUA_ERR_TRANSPORT, BAGUA_ERR_COMM_BROKEN,
 *         BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_lowprec_create(const void *buf, int count, MPI_Datatype datatype, int interval,
                                   MPI_Comm comm, bagua_lowprec_t *state);

/**
 * One step of low-precision ring averaging, in place on buf (collective).
 *
 * With x = buf (after the caller's optimizer step) and n_r the number of
 * distinct ring neighbours (2 for n >= 3, 1 for n == 2; for n == 1 a step
 * does nothing):
 * diff = (x - w) + sum over neighbours (N - w) / (n_r + 1); Q = q8(diff) with
 * blocks of BAGUA_CODEC_BLOCK elements (default 2048) is sent to both neighbours; w, L, R each add
 * the decoded message they correspond to; buf = w rounded to the element type. For n >= 3 this is
 * diff = x + L/3 + R/3 - 5/3 w of the reference.
 *
 * @param state from bagua_lowprec_create.
 * @param buf   the weights, the count and datatype given at creation,
 *              aligned to the element size; may be a different pointer on
 *              each call.
 *
 * Not thread-safe for one state; steps on states of the same comm follow the
 * rules of collectives on that comm. After a communication failure the
 * state and its communicator are broken. A communicating step whose buf
 * holds a NaN or an infinity on any rank is refused on every rank, the
 * replicas unchanged and the step not counted (doc/faults.md).
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL state or buf, a
 *         non-finite buf on some rank),
 *         BAGUA_ERR_TIMEOUT, BAGUA_ERR_MISMATCH, BAGUA_ERR_TRANSPORT,
 *         BAGUA_ERR_CORRUPT_DATA, BAGUA_ERR_COMM_BROKEN.
 */
BAGUA_API int bagua_lowprec_step(bagua_lowprec_t state, void *buf);

/**
 * The replicas of a state, for inspection (tests, checkpoints): float32
 * arrays of the state's count elements, valid until the next step or free.
 * Any output pointer may be NULL.
 *
 * @param state from bagua_lowprec_create.
 * @param self  out: w, this rank's last communicated weights.
 * @param left  out: L, the copy of the left neighbour's (rank - 1) w.
 * @param right out: R, the copy of the right neighbour's (rank + 1) w.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL state).
 */
BAGUA_API int bagua_lowprec_replicas(bagua_lowprec_t state, const float **self, const float **left,
                                     const float **right);

/**
 * Frees a state (local, not collective) and sets *state to NULL; NULL or a
 * pointer to NULL is a no-op.
 * @return BAGUA_SUCCESS.
 */
BAGUA_API int bagua_lowprec_destroy(bagua_lowprec_t *state);

/** Interval of the reference system's asynchronous averaging (ms). */
#define BAGUA_ASYNC_DEFAULT_INTERVAL_MS 500

/** Asynchronous model averaging of one registered buffer. */
typedef struct bagua_async_s *bagua_async_t;

/**
 * Starts asynchronous model averaging of buf with all ranks of comm
 * (collective). A background thread repeatedly waits interval_ms, then runs a
 * round: copy buf to temp (under the lock); allreduce-average temp into
 * reduced; under the lock, buf += reduced - temp, so writes the caller made
 * meanwhile are kept. Every round begins with a one-element allreduce of the
 * ranks' stop flags, so all ranks stop after the same round.
 *
 * The thread has its own duplicate of comm and its own transport
 * (BAGUA_TRANSPORT), so its messages never match the caller's. With the mpi
 * transport MPI must provide MPI_THREAD_MULTIPLE; with the ucx transport any
 * thread level works.
 *
 * A CUDA device buffer is staged through page-locked host memory allocated
 * here, once (a round allocates nothing), on a CUDA stream of the thread's
 * own: under the lock a round copies buf to the host; after the allreduce,
 * again under the lock, it copies buf's current contents to the host, adds
 * reduced - temp there and copies the result back. Each copy is complete
 * before the thread releases the lock. The ordering is that of host memory:
 * the thread touches buf only while holding the lock of
 * bagua_async_average_lock / bagua_async_average_unlock, so the caller's
 * writes to buf (kernels or copies on any stream) must be complete, e.g.
 * their stream synchronized, before it unlocks, and once lock returns buf
 * holds every update applied so far. Reads without the lock race with the
 * thread's copies, as they race with its writes to host memory.
 *
 * @param buf         the weights, count elements of host or CUDA device
 *                    memory, aligned to the element
 *                    size; stays registered (must stay valid) until
 *                    bagua_async_average_destroy. May be NULL only when
 *                    count == 0.
 * @param count       number of elements, >= 0, equal on every rank.
 * @param datatype    MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16.
 * @param interval_ms pause before each round, >= 0;
 *                    BAGUA_ASYNC_DEFAULT_INTERVAL_MS (500) is the reference.
 * @param comm        any intra-communicator.
 * @param handle      out: the running averager (NULL on failure).
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT,
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE, BAGUA_ERR_THREAD_LEVEL (mpi
 *         transport without MPI_THREAD_MULTIPLE), BAGUA_ERR_TRANSPORT,
 *         BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_async_average_create(void *buf, int count, MPI_Datatype datatype,
                                         int interval_ms, MPI_Comm comm, bagua_async_t *handle);

/** Takes the lock that the background thread holds while it reads or
 *  updates buf; the caller brackets its own writes to buf with
 *  lock/unlock. Not recursive. @return BAGUA_SUCCESS,
 *  BAGUA_ERR_INVALID_ARGUMENT (NULL handle). */
BAGUA_API int bagua_async_average_lock(bagua_async_t handle);
/** Releases the lock taken by bagua_async_average_lock (same thread).
 *  @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL handle). */
BAGUA_API int bagua_async_average_unlock(bagua_async_t handle);

/**
 * Stops the background averaging (collective: every rank calls it). Returns
 * once this rank's thread has finished its last round; a rank whose thread
 * already stopped because another rank aborted first returns at once. Must
 * not be called while holding the lock. Aborting a stopped averager is a
 * no-op.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL handle), or the
 *         error that stopped the thread (BAGUA_ERR_TIMEOUT,
 *         BAGUA_ERR_TRANSPORT, a failed copy of a device buffer, ...) after
 *         which the averager is broken.
 */
BAGUA_API int bagua_async_average_abort(bagua_async_t handle);

/**
 * Restarts a stopped averager (collective: a barrier among the averager's
 * ranks, then the thread starts again). Resuming a running averager is a
 * no-op.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL handle),
 *         BAGUA_ERR_COMM_BROKEN (an earlier round failed), BAGUA_ERR_TIMEOUT.
 */
BAGUA_API int bagua_async_average_resume(bagua_async_t handle);

/**
 * The number of rounds whose average this rank's thread has applied to buf
 * since bagua_async_average_create (every rank applies the same rounds, so
 * the count agrees once the averager is stopped). A round whose average is
 * not finite (some rank's buf holds a NaN or an infinity) is skipped on
 * every rank and not counted. Each round sends one
 * allreduce of count + 1 elements (the extra one agrees on stopping). Local;
 * thread-safe.
 * @param rounds output.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL handle or rounds).
 */
BAGUA_API int bagua_async_average_rounds(bagua_async_t handle, long long *rounds);

/**
 * Stops the averager as bagua_async_average_abort does (collective), frees
 * its thread, transport and communicator, and sets *handle to NULL. NULL or
 * a pointer to NULL is a no-op. Call it before MPI_Finalize.
 * @return BAGUA_SUCCESS, or the error that had stopped the thread (the
 *         resources are freed in every case).
 */
BAGUA_API int bagua_async_average_destroy(bagua_async_t *handle);

/* ----------------------------------------------------------------------------
 * Bucketed communicator and nonblocking collectives
 * ------------------------------------------------------------------------- */
/* @section buckets */

/** Default byte cap of a bucket: 10 MiB, as BAGUA. See bagua_bucket_config. */
#define BAGUA_BUCKET_DEFAULT_BYTES (10u << 20)

/** The collective a bucket runs when all its tensors are ready: exact,
 *  q8, q4, fp16 or bf16 (not sign: it needs a state per buffer). The
 *  BAGUA_BUCKET_* names are the earlier spelling, kept for one release. */
typedef bagua_algorithm bagua_bucket_algorithm;
#define BAGUA_BUCKET_ALLREDUCE BAGUA_ALGORITHM_EXACT
#define BAGUA_BUCKET_ALLREDUCE_Q8 BAGUA_ALGORITHM_Q8
#define BAGUA_BUCKET_ALLREDUCE_FP16 BAGUA_ALGORITHM_FP16
#define BAGUA_BUCKET_ALLREDUCE_BF16 BAGUA_ALGORITHM_BF16

/** A bucket's algorithm and its options. */
typedef struct bagua_bucket_algorithm_config {
  bagua_algorithm algorithm;
  /** The reduction; default BAGUA_AVG (gradient averaging); MPI_OP_NULL
   *  means BAGUA_AVG. */
  MPI_Op op;
} bagua_bucket_algorithm_config;

/** Settings of a bucketed communicator; fill with bagua_bucket_config_init
 *  (defaults from the environment) or BAGUA_BUCKET_CONFIG_INITIALIZER (fixed
 *  defaults), then change fields. Fields are only ever appended; struct_size
 *  tells the library which ones the caller knows. */
typedef struct bagua_bucket_config {
  /** sizeof(bagua_bucket_config) as the caller was compiled. */
  size_t struct_size;
  /** Byte cap of a bucket, >= 1; default BAGUA_BUCKET_BYTES (10 MiB). */
  size_t bucket_bytes;
  /** 1: move each bucket's tensors into one contiguous buffer owned by the
   *  bucketed communicator (no copy per call; the tensors' new addresses are
   *  returned by finalize_registration). 0 (default): tensors stay where they
   *  are and are packed into a bucket buffer for each call. */
  int flatten;
  /** Algorithm of every bucket until changed with
   *  bagua_bucket_comm_set_algorithm; default exact allreduce, BAGUA_AVG. */
  bagua_bucket_algorithm_config algorithm;
  /** 1: automatic bucket size. During the first steps (a step ends at
   *  bagua_bucket_comm_wait_all) the communicator tries the caps 1, 2, 4,
   *  ..., 64 MiB and bucket_bytes (those forming different buckets), one
   *  warm-up and two timed steps each, then keeps the cap of the lowest
   *  step time (the slowest rank's mean, agreed by an allreduce); every rank
   *  switches at the same step. Bucket ids and counts may change at those
   *  steps (ask bagua_bucket_comm_tensor_bucket again). Needs flatten 0.
   *  0 (default): bucket_bytes. Default BAGUA_BUCKET_AUTO (0). */
  int auto_bucket_bytes;
} bagua_bucket_config;

/** Static initializer: bucket_bytes BAGUA_BUCKET_DEFAULT_BYTES (not the
 *  environment), flatten 0, exact allreduce, auto_bucket_bytes 0; op
 *  MPI_OP_NULL means BAGUA_AVG. */
#define BAGUA_BUCKET_CONFIG_INITIALIZER                         \
  {                                                             \
    sizeof(bagua_bucket_config), BAGUA_BUCKET_DEFAULT_BYTES, 0, \
        {BAGUA_ALGORITHM_EXACT, MPI_OP_NULL}, 0                 \
  }

/** A bucketed communicator (opaque handle). */
typedef struct bagua_bucket_comm_s *bagua_bucket_comm_t;
/** The earlier spelling of the handle's struct, kept for one release. */
typedef struct bagua_bucket_comm_s bagua_bucket_comm;

/**
 * Fills `config` with the defaults: bucket_bytes from BAGUA_BUCKET_BYTES
 * (default 10 MiB), flatten 0, exact allreduce with BAGUA_AVG,
 * auto_bucket_bytes from BAGUA_BUCKET_AUTO (default 0). Local.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL config, or a bad
 *         BAGUA_BUCKET_BYTES or BAGUA_BUCKET_AUTO), BAGUA_ERR_NOT_INITIALIZED.
 */
BAGUA_API int bagua_bucket_config_init(bagua_bucket_config *config);

/**
 * Creates a bucketed communicator on comm (collective over comm): it
 * duplicates comm and creates its own transport (BAGUA_TRANSPORT) and worker
 * threads, so its traffic never meets the user's calls on comm.
 *
 * Usage per training run: register every tensor (in the order they will
 * become ready, e.g. reverse order of use in the forward pass), finalize
 * registration; then per iteration: mark each tensor ready as it is computed,
 * wait (all) before using the results. See doc/buckets.md.
 *
 * @param comm   any intra-communicator; may be freed after this call.
 * @param config NULL for the defaults (bagua_bucket_config_init).
 * @param out    output: the new bucketed communicator (NULL on failure).
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (MPI_COMM_NULL, NULL out,
 *         struct_size not one this library knows, bucket_bytes 0, flatten not
 *         0/1, auto_bucket_bytes not 0/1 or 1 with flatten, bad algorithm),
 *         BAGUA_ERR_UNSUPPORTED_OP, BAGUA_ERR_THREAD_LEVEL (mpi transport
 *         without MPI_THREAD_MULTIPLE), BAGUA_ERR_TRANSPORT,
 *         BAGUA_ERR_NOT_INITIALIZED, BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_bucket_comm_create(MPI_Comm comm, const bagua_bucket_config *config,
                                       bagua_bucket_comm_t *out);

/**
 * Destroys a bucketed communicator (collective, before MPI_Finalize): waits
 * for buckets still in flight, writes the BAGUA_TIMELINE file if set, frees
 * the threads, transport and duplicate communicator, and any flattened
 * storage (flattened tensor addresses become invalid), and sets *bc to NULL.
 * NULL or a pointer to NULL is a no-op.
 * @return BAGUA_SUCCESS.
 */
BAGUA_API int bagua_bucket_comm_destroy(bagua_bucket_comm_t *bc);
#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* An earlier bagua_bucket_comm_destroy took the handle itself; C accepts
 * that call with a warning and it would free the wrong object. This makes
 * it an error (in C++ it is one anyway): only a bagua_bucket_comm_t *
 * selects the call. */
#define bagua_bucket_comm_destroy(bc) \
  bagua_bucket_comm_destroy(_Generic((bc), bagua_bucket_comm_t * : (bc)))
#endif

/**
 * Registers a tensor, before finalize_registration. Tensors are bucketed in
 * registration order; every rank must register the same counts and
 * datatypes in the same order. Not thread-safe (one thread registers).
 *
 * @param bc        the bucketed communicator.
 * @param ptr       host or CUDA device memory of count elements, aligned
 *                  to the element size; must stay valid until
 *                  destroy (or finalize_registration with flatten). NULL
 *                  only when count == 0. Must not overlap another tensor.
 *                  All tensors of bc are host memory, or all device memory;
 *                  device tensors need flatten 0. A device tensor is copied
 *                  to host storage for each call once the work queued on the
 *                  stream of bagua_set_cuda_stream(comm) before
 *                  bagua_bucket_comm_mark_ready completes (a CUDA event), and
 *                  the result is copied back before wait/test report it.
 * @param count     number of elements, >= 0.
 * @param datatype  MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16.
 * @param tensor_id output: 0, 1, 2, ... in registration order.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL bc/ptr/tensor_id,
 *         negative count, overlap with a registered tensor, already
 *         finalized, misaligned ptr, host and device tensors mixed, a
 *         device tensor with flatten), BAGUA_ERR_UNSUPPORTED_DATATYPE.
 */
BAGUA_API int bagua_bucket_comm_register(bagua_bucket_comm_t bc, void *ptr, int count,
                                         MPI_Datatype datatype, int *tensor_id);

/**
 * Forms the buckets (collective): in registration order, a bucket takes
 * tensors of one datatype until the next would exceed bucket_bytes (a larger
 * tensor gets a bucket of its own); a datatype change starts a new bucket.
 * Checks that every rank formed the same buckets. With flatten, each
 * bucket's tensors are copied into one contiguous buffer and from now on
 * live there.
 *
 * @param bc            the bucketed communicator.
 * @param tensor_addrs  NULL, or an array with one entry per registered
 *                      tensor, filled with each tensor's address from now on
 *                      (its new address with flatten, else the registered one).
 * @param num_buckets   output: the number of buckets (0 .. n-1 are their ids).
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL bc/num_buckets,
 *         nothing registered, called twice, more than 16384 buckets),
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE / BAGUA_ERR_UNSUPPORTED_OP (the
 *         default algorithm cannot run on a bucket's datatype),
 *         BAGUA_ERR_MISMATCH (ranks registered different tensors),
 *         BAGUA_ERR_TRANSPORT, BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_bucket_comm_finalize_registration(bagua_bucket_comm_t bc, void **tensor_addrs,
                                                      int *num_buckets);

/** The bucket a tensor belongs to (after finalize_registration). Thread-safe.
 *  @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL arguments, unknown
 *          tensor, not finalized). */
BAGUA_API int bagua_bucket_comm_tensor_bucket(bagua_bucket_comm_t bc, int tensor_id, int *bucket);

/**
 * Sets the algorithm of one bucket, or of all with bucket == -1, between
 * rounds (no tensor of the bucket marked ready). Every rank must set the same
 * algorithms. Validated against the bucket's datatype; on failure nothing
 * changes.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL, unknown bucket,
 *         not finalized, bucket in a round, bad algorithm),
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE, BAGUA_ERR_UNSUPPORTED_OP.
 */
BAGUA_API int bagua_bucket_comm_set_algorithm(bagua_bucket_comm_t bc, int bucket,
                                              const bagua_bucket_algorithm_config *algorithm);

/**
 * Marks a tensor's contents final for this round. When the last tensor of a
 * bucket is marked, the bucket's collective starts at once on a background
 * thread, in place on the tensors. Callable from any thread, in any order
 * (each rank may mark in its own order); do not write the bucket's tensors
 * until its wait/test reports completion.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL bc, unknown
 *         tensor, not finalized, tensor already marked in this round),
 *         BAGUA_ERR_COMM_BROKEN (an earlier bucket failed).
 */
BAGUA_API int bagua_bucket_comm_mark_ready(bagua_bucket_comm_t bc, int tensor_id);

/**
 * Waits for a bucket's collective of this round and ends the round for that
 * bucket (its tensors may be marked again). A bucket whose tensors are not
 * all marked yet is waited for up to BAGUA_TIMEOUT_MS (another thread may
 * still mark them). Thread-safe, but a round's result is reported once.
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT (NULL bc, unknown bucket,
 *         nothing registered/finalized), BAGUA_ERR_TIMEOUT (tensors never
 *         marked, or a peer), or the bucket's failure (BAGUA_ERR_MISMATCH,
 *         BAGUA_ERR_TRANSPORT, ...), after which the communicator is broken.
 */
BAGUA_API int bagua_bucket_comm_wait(bagua_bucket_comm_t bc, int bucket);

/**
 * Like bagua_bucket_comm_wait without blocking: *flag = 1 and the round
 * ends when the bucket's collective has completed, else *flag = 0.
 * @return as bagua_bucket_comm_wait (no BAGUA_ERR_TIMEOUT for unmarked
 *         tensors); BAGUA_ERR_INVALID_ARGUMENT also for NULL flag.
 */
BAGUA_API int bagua_bucket_comm_test(bagua_bucket_comm_t bc, int bucket, int *flag);

/**
 * Waits for every bucket (bagua_bucket_comm_wait on each, continuing after a
 * failure) and returns the first failure; call it before the optimizer step.
 * @return as bagua_bucket_comm_wait.
 */
BAGUA_API int bagua_bucket_comm_wait_all(bagua_bucket_comm_t bc);

/**
 * Nonblocking exact allreduce: arguments as MPI_Iallreduce, semantics and
 * arguments' rules as bagua_allreduce. *request is an MPI generalized request:
 * complete it with MPI_Wait, MPI_Test, MPI_Waitall, ... (not MPI_Cancel: a
 * started collective runs to the end). Buffers must not be touched until
 * then. CUDA device buffers are staged: the input is taken once the work
 * queued on the stream of bagua_set_cuda_stream(comm) before this call is
 * done, and the result is in recvbuf when the request completes; do not
 * touch the buffers on any stream before that.
 *
 * Every rank must start its nonblocking calls on comm in the same order
 * (as MPI requires); they run concurrently on background threads over a
 * private duplicate of comm, so they never interfere with blocking bagua
 * calls on comm. The first nonblocking call on comm is collective. At most
 * BAGUA_MAX_IN_FLIGHT (default 1024) may be started and not yet waited for
 * (freed by the MPI_Wait/MPI_Test that completes them, or MPI_Request_free)
 * per communicator, so ranks that start and wait for the same calls refuse
 * the same ones; a call beyond it is refused but keeps its place in the call
 * order (a peer's matching call that was not refused fails), so later calls
 * still pair with the same calls on every rank. Needs MPI_THREAD_MULTIPLE.
 *
 * A failure found while running (timeout, mismatch, ...) makes MPI_Wait /
 * MPI_Test report MPI_ERR_OTHER and sets bagua_last_error() on the waiting
 * thread. The request is a generalized request, whose errors MPI raises on
 * the error handler it chooses, not comm's: Open MPI 4.1 uses
 * MPI_COMM_WORLD's (MPI_ERRORS_ARE_FATAL by default, which aborts the job).
 * To get the error back, set MPI_ERRORS_RETURN on MPI_COMM_WORLD as well.
 *
 * @param request output: the request (MPI_REQUEST_NULL on failure).
 * @return BAGUA_SUCCESS or as bagua_allreduce for invalid arguments;
 *         BAGUA_ERR_THREAD_LEVEL, BAGUA_ERR_COMM_BROKEN (an earlier
 *         nonblocking call on comm failed), BAGUA_ERR_INVALID_ARGUMENT (NULL
 *         request, too many in flight).
 */
BAGUA_API int bagua_iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm, MPI_Request *request);

/** Nonblocking bagua_allreduce_q8 (flat): arguments and rules as
 *  bagua_iallreduce, datatypes, ops and accuracy as bagua_allreduce_q8. */
BAGUA_API int bagua_iallreduce_q8(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request *request);

/** Nonblocking bagua_allreduce_q4 (flat): arguments and rules as
 *  bagua_iallreduce, datatypes, ops and accuracy as bagua_allreduce_q4. */
BAGUA_API int bagua_iallreduce_q4(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request *request);

/** Nonblocking bagua_allreduce_fp16 (flat): arguments and rules as
 *  bagua_iallreduce, datatypes, ops and accuracy as bagua_allreduce_fp16. */
BAGUA_API int bagua_iallreduce_fp16(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request);

/** Nonblocking bagua_allreduce_bf16 (flat): arguments and rules as
 *  bagua_iallreduce, datatypes, ops and accuracy as bagua_allreduce_bf16. */
BAGUA_API int bagua_iallreduce_bf16(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Request *request);

/**
 * Nonblocking allreduce with the algorithm chosen at run time: the same
 * call as bagua_iallreduce (BAGUA_ALGORITHM_EXACT) or the nonblocking call
 * of any algorithm the iallreduce family offers (bagua-info --support),
 * with its datatypes, ops and accuracy. Algorithms with error feedback
 * (sign) need a state per buffer and are refused
 * (BAGUA_ERR_INVALID_ARGUMENT): call bagua_iallreduce_sign.
 */
BAGUA_API int bagua_iallreduce_alg(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   bagua_algorithm algorithm, MPI_Request *request);

/**
 * Nonblocking bagua_allreduce_sign (flat): arguments and rules as
 * bagua_iallreduce, datatypes, ops, accuracy and state as
 * bagua_allreduce_sign; a call gives the same result and leaves the same
 * residuals as the blocking one. The call holds the state until it
 * completes: another call, save or load on it meanwhile returns
 * BAGUA_ERR_INVALID_ARGUMENT. Device buffers are staged through the host
 * with the state's host residuals, so a state whose residuals a blocking
 * call already put on the device is refused.
 */
BAGUA_API int bagua_iallreduce_sign(const void *sendbuf, void *recvbuf, int count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    bagua_sign_state_t state, MPI_Request *request);

/** Called on bagua's progress thread when a nonblocking call has ended:
 *  status BAGUA_SUCCESS with the result in recvbuf, or the failure and its
 *  message (valid during the call). It must return quickly and make no bagua
 *  or MPI call: every nonblocking call of the communicator waits for it. */
typedef void (*bagua_complete_fn)(void *arg, int status, const char *message);

/** The options of bagua_iallreduce_ex; fill with
 *  BAGUA_IALLREDUCE_PARAMS_INITIALIZER, then change fields. Fields are only
 *  ever appended; struct_size tells the library which ones the caller knows. */
typedef struct bagua_iallreduce_params {
  /** sizeof(bagua_iallreduce_params) as the caller was compiled. */
  size_t struct_size;
  /** Any algorithm the iallreduce family offers; default exact. */
  bagua_algorithm algorithm;
  /** The error-feedback state of an algorithm that keeps one (sign), as
   *  bagua_iallreduce_sign's; NULL otherwise (default). */
  bagua_sign_state_t state;
  /** Called once when the call has ended, before its request (if any)
   *  completes; NULL (default): none. */
  bagua_complete_fn complete;
  /** complete's first argument; default NULL. */
  void *complete_arg;
} bagua_iallreduce_params;

/** Static initializer: exact, no state, no callback. */
#define BAGUA_IALLREDUCE_PARAMS_INITIALIZER \
  { sizeof(bagua_iallreduce_params), BAGUA_ALGORITHM_EXACT, NULL, NULL, NULL }

/**
 * Nonblocking allreduce with its options in one growable struct: the call
 * of bagua_iallreduce_alg, or bagua_iallreduce_sign with params->state, that
 * also reports its end through params->complete. With a callback, request
 * may be NULL: no MPI request is made and the callback alone reports the
 * end (the call counts against BAGUA_MAX_IN_FLIGHT until it has returned),
 * for callers that must not block in MPI_Wait. A call refused at start
 * never calls back.
 *
 * @return as bagua_iallreduce_alg and bagua_iallreduce_sign;
 *         BAGUA_ERR_INVALID_ARGUMENT also for NULL params, a struct_size
 *         this library does not know, a state with an algorithm that keeps
 *         none, or NULL request without a callback.
 */
BAGUA_API int bagua_iallreduce_ex(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  const bagua_iallreduce_params *params, MPI_Request *request);

#ifdef __cplusplus
}
#endif

#endif /* BAGUA_H */
