// The bucket timeline (BAGUA_TIMELINE): events of every bucketed communicator
// of the process, written as Chrome-tracing JSON (chrome://tracing, Perfetto)
// when a bucketed communicator is destroyed. One file per rank: the name with
// ".rank<R>" inserted before a ".json" suffix (or appended, with ".json").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "../base/status.hpp"

namespace bagua {

using TimelineClock = std::chrono::steady_clock;

// Track (Chrome "thread") of bucket `bucket` of bucketed communicator `comm`.
struct TimelineTrack {
  int comm;
  int bucket;
};

class Timeline {
 public:
  // The process's timeline, configured from BAGUA_TIMELINE on first use.
  static Timeline &get();

  bool enabled() const { return !path_.empty(); }
  // A new number for a bucketed communicator (its tracks' prefix).
  int next_comm_id();

  // A span [begin, end] of `name` on `track` for call `round` of the bucket.
  void span(TimelineTrack track, const char *name, uint64_t round, TimelineClock::time_point begin,
            TimelineClock::time_point end);
  // An instant event.
  void instant(TimelineTrack track, const char *name, uint64_t round, TimelineClock::time_point at);
  // Names a track ("comm 0 bucket 3").
  void name_track(TimelineTrack track);

  // Writes every event recorded so far to this rank's file.
  Status write(int rank);

  // The file rank `rank` writes for BAGUA_TIMELINE=`path`.
  static std::string rank_path(const std::string &path, int rank);

 private:
  Timeline();
  void append(const std::string &line);

  std::string path_;
  TimelineClock::time_point epoch_;
};

}  // namespace bagua
