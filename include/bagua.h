/*
 * bagua: relaxed collectives for MPI.
 *
 * Every collective takes the same arguments, in the same order, as its MPI
 * counterpart, so an MPI program switches by renaming the call. All functions
 * return an int that is BAGUA_SUCCESS (0) or one of bagua_status_t; no
 * exception or signal ever crosses this interface.
 *
 * Lifetime: nothing needs to be called besides MPI_Init. The first bagua call
 * on a communicator is collective over that communicator: it duplicates the
 * communicator and creates transport endpoints, cached on the user's
 * communicator as an MPI attribute and released when that communicator is
 * freed or at MPI_Finalize.
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

#include <mpi.h>

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
  /** Ranks disagree on the call (count, datatype or size of a message). */
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
 * recursive doubling (latency-optimal); BAGUA_ALLREDUCE_ALGO and
 * BAGUA_RING_THRESHOLD select. Blocking; thread rules as above.
 *
 * @return BAGUA_SUCCESS, BAGUA_ERR_INVALID_ARGUMENT,
 *         BAGUA_ERR_UNSUPPORTED_DATATYPE, BAGUA_ERR_UNSUPPORTED_OP,
 *         BAGUA_ERR_TIMEOUT, BAGUA_ERR_MISMATCH, BAGUA_ERR_TRANSPORT,
 *         BAGUA_ERR_COMM_BROKEN, BAGUA_ERR_OUT_OF_MEMORY.
 */
BAGUA_API int bagua_allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* ----------------------------------------------------------------------------
 * Compressed allreduce (q8, fp16/bf16 cast, 1-bit sign)
 * ------------------------------------------------------------------------- */
/* @section compressed */

/* ----------------------------------------------------------------------------
 * Partial reduce: averaging among the first P ready ranks
 * ------------------------------------------------------------------------- */
/* @section partial */

/* ----------------------------------------------------------------------------
 * Decentralized and asynchronous averaging
 * ------------------------------------------------------------------------- */
/* @section decentralized */

/* ----------------------------------------------------------------------------
 * Bucketed communicator and nonblocking collectives
 * ------------------------------------------------------------------------- */
/* @section buckets */

#ifdef __cplusplus
}
#endif

#endif /* BAGUA_H */
