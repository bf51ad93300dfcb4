// The one path from a call descriptor to the algorithms: the codec adapter
// of each wire format (host or device, with the fp16 prescale), the flat
// schedules, hierarchical composition, and the bytes a call sends.
#pragma once

#include <memory>

#include <span>

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

// Runs `call` with a flat `schedule` among the ranks of ctx.transport (an
// average divides by their number). `sink` (may be NULL) receives the
// encode/decode phases of compressed schedules.
Status run_flat(AlgoContext &ctx, const Call &call, Schedule schedule, const Options &options,
                PhaseSink *sink = nullptr);

// A blocking call on c, the user communicator's state: selects the
// schedule, runs it flat or hierarchically, records a failure in c.
Status run_blocking(Communicator &c, const Call &call);

// Decentralized averaging in `round`: `all` is the blocking exact average;
// shift_one and ring exchange with their peers of the round.
Status run_peer_average(Communicator &c, const Call &call, PeerMode mode, int round);

// Low-precision ring averaging (q8 blocks of BAGUA_CODEC_BLOCK): the exact
// initial exchange of the replicas, and one step on call.dst in place.
Status run_lowprec_init(Communicator &c, const Call &call, LowprecReplicas *replicas);
Status run_lowprec_step(Communicator &c, const Call &call, LowprecReplicas *replicas);

// A partial-reduce group's average among `members` of c (this rank is
// members[local]), in tag slot `group_id`: uniform (weight < 0: the exact
// sum divided once, or the codec's average) or weighted (dst = sum of
// weight_i * src_i).
Status run_group_average(Communicator &c, const Call &call, std::span<const int> members,
                         int local, int64_t group_id, double weight,
                         std::vector<unsigned char> &scratch);

// The size of one message of call.count elements in the call's wire format.
Status message_bytes(const Call &call, const Options &options, size_t *bytes);

// Bytes `rank` of `ranks` sends in a flat call of `call`'s wire format, size
// and type, with the schedule the policy selects.
Status flat_bytes_sent(const Call &call, int rank, int ranks, const Options &options,
                       size_t *bytes);

}  // namespace bagua
