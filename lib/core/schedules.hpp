// The schedules an allreduce-shaped call can run, listed once: each row
// names a schedule and carries what runs it and what it sends. The
// selection policy's rules point at these rows (select.hpp), so a caller
// runs the row it was handed and nothing maps a schedule to its algorithm.
#pragma once

#include <cstddef>
#include <cstdint>

#include "../base/status.hpp"
#include "call.hpp"
#include "options.hpp"

namespace bagua {

struct AlgoContext;
class Communicator;
class PhaseSink;

enum class Schedule : uint8_t {
  ring,                // exact: pipelined ring reduce-scatter + allgather
  recursive_doubling,  // exact: latency-optimal for small messages
  bytegrad,            // compressed: all-to-all of encoded chunks, reduce, allgather
  hierarchical,        // compressed: exact reduce in the node, ByteGrad among leaders
};

struct ScheduleInfo {
  Schedule id;
  const char *name;
  // A flat schedule: `call` among the ranks of ctx.transport (the call
  // check already agreed); `sink` (may be NULL) receives codec phases.
  Status (*run_flat)(AlgoContext &ctx, const Call &call, const Options &options, PhaseSink *sink);
  // A schedule over the whole communicator (it forms the node and leader
  // groups itself, call check included); NULL for flat schedules.
  Status (*run_on_communicator)(Communicator &c, const Call &call);
  // Bytes `rank` of `ranks` sends in the data movement of one flat call (the
  // call check excluded); for the hierarchical schedule, its exchange among
  // `ranks` leaders.
  size_t (*bytes_sent)(const Call &call, int rank, int ranks, const Options &options);

  bool flat() const { return run_flat != nullptr; }
};

const ScheduleInfo &schedule_info(Schedule s);

}  // namespace bagua
