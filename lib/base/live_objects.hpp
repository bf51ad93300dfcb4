// Counts of the library's live objects of each kind: a test that frees every
// communicator it used checks that the counts return to where they started,
// so a communicator's lifetime leaves nothing behind in the fault-free path.
#pragma once

#include <cstdint>

namespace bagua {

enum class Live : uint8_t {
  communicator,  // Communicator states (cached on a user communicator or private)
  transport,     // Transport objects (a locked one counts with the one it wraps)
  duplicate,     // MPI communicators bagua duplicated and has not freed
  engine,        // progress engines (one thread each)
  kinds,         // the number of kinds above
};

void live_add(Live kind, int64_t delta);
int64_t live_count(Live kind);

}  // namespace bagua
