// The one path from a call descriptor to the algorithms: the codec adapter
// of each wire format (host or device, with the fp16 prescale), the flat
// schedules, hierarchical composition, and the bytes a call sends.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "../algo/compressed.hpp"
#include "../algo/decentralized.hpp"
#include "../algo/timed_codec.hpp"
#include "call.hpp"
#include "options.hpp"
#include "select.hpp"

namespace bagua {

class Communicator;

// The codec of a compressed call among `ranks` contributors, in the call's
// memory type (device codecs run on the user communicator's CUDA stream).
std::unique_ptr<ChunkCodec> make_call_codec(const Call &call, int ranks, const Options &options);
// A host codec to size messages with (a sign state's residuals are not read).
std::unique_ptr<ChunkCodec> sizing_codec(const Call &call, int ranks, const Options &options);

// A 32-bit hash (FNV-1a) of fields every rank must pass alike.
uint32_t fingerprint_of(std::span<const uint64_t> fields);

// A 32-bit fingerprint of what ranks must agree on in `call` (family, wire
// format, schedule, count, datatype, op) and `extra` (e.g. a peer mode).
uint32_t call_fingerprint(const Call &call, Schedule schedule, uint64_t extra = 0);

// Whether a call keeps state across calls that a non-finite input would
// poison for good (a sign state's residuals, low-precision replicas).
bool keeps_state(const Call &call);

// Before data moves: every rank of ctx learns whether all ranks' call
// fingerprints are equal (a 16-byte recursive doubling in the call's own
// tags, completed before the algorithm posts anything), and all return
// BAGUA_ERR_MISMATCH if not. Skipped with BAGUA_CHECK_CALLS=0, except for a
// call that keeps state: its ranks also learn whether every rank's input
// (host memory) is finite, and all return BAGUA_ERR_INVALID_ARGUMENT, the
// state untouched, if not.
Status agree_on_call(AlgoContext &ctx, const Call &call, Schedule schedule, const Options &options);
// The agreement itself: *same is whether every rank of ctx passed `mine`
// (a 16-byte recursive doubling in the call's own tags).
Status agree_on_fingerprint(AlgoContext &ctx, uint32_t mine, bool *same);
// The same between this rank and each of `peers` (pairwise exchanges), for
// calls among a few peers; `extra` joins the fingerprint (mode, round).
Status agree_with_peers(AlgoContext &ctx, const Call &call, uint64_t extra,
                        const std::vector<int> &peers, const Options &options);

// Whether the call's buffers are aligned to its element size.
bool buffers_aligned(const Call &call);

// An aligned, in-place copy of a call's input, for buffers that are not.
class AlignedStaging {
 public:
  // *staged is `call` on the copy (host buffers).
  Status stage(const Call &call, Call *staged);
  // The copy's result into call.dst.
  void copy_back(const Call &call) const;

 private:
  SendVector<uint64_t> words_;  // 8-byte words: aligned for every element type
};

// Runs body(call) with buffers aligned to the element size: host buffers
// that are not (MPI accepts any alignment) go through an aligned copy, in
// place; the result is copied back when body succeeds. A template, so the
// aligned (usual) case costs one test and no allocation.
template <class Body>
Status with_aligned_buffers(const Call &call, Body &&body) {
  if (buffers_aligned(call)) return body(call);
  AlignedStaging staging;
  Call staged;
  BAGUA_TRY(staging.stage(call, &staged));
  BAGUA_TRY(body(staged));
  staging.copy_back(call);
  return BAGUA_SUCCESS;
}

// `call` in place on `copy`, host memory holding the call's input (a
// device call staged through page-locked memory).
Call staged_on_host(const Call &call, void *copy);

// Runs `call` with a flat `schedule` among the ranks of ctx.transport (an
// average divides by their number), after the call check. `sink` (may be
// NULL) receives the encode/decode phases of compressed schedules.
Status run_flat(AlgoContext &ctx, const Call &call, const ScheduleInfo &schedule,
                const Options &options, PhaseSink *sink = nullptr);

// A blocking call on c, the user communicator's state: selects the
// schedule, runs it flat or hierarchically, records a failure in c.
Status run_blocking(Communicator &c, const Call &call);

// recvbuf = sendbuf (none when in place), in the call's memory: a
// decentralized step between averaging rounds.
Status copy_input_to_output(const Call &call);

// Decentralized averaging in `round`: `all` is the blocking exact average;
// shift_one and ring exchange with their peers of the round.
Status run_peer_average(Communicator &c, const Call &call, PeerMode mode, int round);

// Low-precision ring averaging (q8 blocks of BAGUA_CODEC_BLOCK): the exact
// initial exchange of the replicas, and one step on call.dst in place. Each
// is checked among all ranks (agree_on_call), not only the neighbours: a
// non-finite input anywhere is refused everywhere, or the neighbours'
// neighbours would wait in vain.
Status run_lowprec_init(Communicator &c, const Call &call, LowprecReplicas *replicas);
Status run_lowprec_step(Communicator &c, const Call &call, LowprecReplicas *replicas);

// A group's average on ctx (the group's view of the transport), with
// `schedule`: uniform (weight < 0: the exact sum divided once, or the codec's
// average) or weighted (dst = sum over members of weight_i * src_i).
Status average_in_group(AlgoContext &ctx, const Call &call, const ScheduleInfo &schedule,
                        double weight, const Options &options);

// A partial-reduce group's average among `members` of c (this rank is
// members[local]), in tag slot `group_id`: uniform (weight < 0: the exact
// sum divided once, or the codec's average) or weighted (dst = sum of
// weight_i * src_i).
Status run_group_average(Communicator &c, const Call &call, std::span<const int> members, int local,
                         int64_t group_id, double weight, Bytes &scratch);

// The size of one message of call.count elements in the call's wire format.
Status message_bytes(const Call &call, const Options &options, size_t *bytes);

// Bytes `rank` of `ranks` sends in a flat call of `call`'s wire format, size
// and type with `schedule` (its call check included).
size_t schedule_bytes_sent(const Call &call, Schedule schedule, int rank, int ranks,
                           const Options &options);
// Rounds of messages among all ranks in each phase of a ByteGrad call of
// `call` (bytegrad_segment_rounds).
size_t bytegrad_rounds(const Call &call, int ranks, const Options &options);
// The same with the schedule the policy selects.
Status flat_bytes_sent(const Call &call, int rank, int ranks, const Options &options,
                       size_t *bytes);

}  // namespace bagua
