// The descriptor of one collective call. Every C
// entry point builds one from its MPI-style arguments (describe_*), checks
// it against the support matrix (support.hpp), and hands it on; the
// selection policy (select.hpp) turns it into a schedule, and run.hpp runs
// it. Memory types are resolved here, once per call.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "../base/dtype.hpp"
#include "../base/status.hpp"
#include "../base/wires.hpp"
#include "../mc/device_scratch.hpp"

namespace bagua {

// Error-feedback residuals of the sign codec (bagua_sign_state_t), float32:
// `contribution` indexed like the user's buffer, `reduced` like the chunk
// this rank owns. They live where the state's first call's buffers did: on
// the host, or (device_*) on the device, made from the host ones by that
// call; a state then serves calls of that memory type only. One call at a
// time uses a state: a call claims it, and releases it when it has run.
struct SignFeedback {
  // Zero residuals of `count` elements for calls on comm.
  SignFeedback(MPI_Comm c, size_t n) : comm(c), count(n), contribution(n), reduced(n) {}

  // False when another call holds the state.
  bool claim() { return !in_use.exchange(true); }
  void release() { in_use.store(false); }

  MPI_Comm comm;
  size_t count;
  std::vector<float> contribution, reduced;
  bool bound = false;  // a call with elements chose `memory`
  Memory memory = Memory::host;
  DeviceFloats device_contribution, device_reduced;
  std::atomic<bool> in_use{false};
};

struct Call {
  Family family;
  Wire wire;
  const void *src;  // sendbuf, or recvbuf for MPI_IN_PLACE
  void *dst;
  size_t count;
  DType dtype;
  ReduceOp op;
  Memory memory;
  SignFeedback *feedback = nullptr;  // wires with error feedback only (claimed)
  MPI_Comm comm;                     // the user's communicator (device calls: its CUDA stream)
  // Device calls: the communicator's device scratch, set by the core just
  // before a device codec runs (with_runnable_buffers); nullptr otherwise.
  DeviceScratch *scratch = nullptr;
};

// A reduction's arguments as MPI_Allreduce takes them: buffers (NULL only
// with count 0; MPI_IN_PLACE; no partial overlap; aligned to the element
// size), count >= 0, datatype and op handles, memory type; then the support
// matrix. Every failure names the argument and the rule.
Status describe_reduction(Family family, Wire wire, const void *sendbuf, void *recvbuf,
                          int64_t count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          Call *out);

// A single buffer that a state object keeps using (lowprec, async, bucket
// tensors): the same checks for one buffer (`name` is its argument), op
// fixed to an average.
Status describe_buffer(Family family, Wire wire, const char *name, const void *buf, int64_t count,
                       MPI_Datatype datatype, MPI_Comm comm, Call *out);

// Records the CUDA stream of device-buffer calls on `comm` (nullptr: the
// default stream); kept by the memory component (lib/mc).
void set_device_stream(MPI_Comm comm, void *stream);

}  // namespace bagua
