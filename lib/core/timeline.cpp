#include "timeline.hpp"

#include <cstdio>
#include <mutex>
#include <vector>

#include "../base/env.hpp"

namespace bagua {
namespace {

// Beyond this many events new ones are dropped (about 100 MB of JSON).
constexpr size_t kMaxEvents = 1 << 20;

std::mutex mutex;
std::vector<std::string> events;
int comm_ids = 0;

int track_id(TimelineTrack t) { return t.comm * 100000 + t.bucket; }

}  // namespace

Timeline &Timeline::get() {
  static Timeline timeline;
  return timeline;
}

Timeline::Timeline() : path_(env_string("BAGUA_TIMELINE")), epoch_(TimelineClock::now()) {}

int Timeline::next_comm_id() {
  std::lock_guard lock(mutex);
  return comm_ids++;
}

void Timeline::append(const std::string &line) {
  std::lock_guard lock(mutex);
  if (events.size() < kMaxEvents) events.push_back(line);
}

void Timeline::span(TimelineTrack track, const char *name, uint64_t round,
                    TimelineClock::time_point begin, TimelineClock::time_point end) {
  if (!enabled()) return;
  using std::chrono::duration;
  const double ts = duration<double, std::micro>(begin - epoch_).count();
  const double dur = duration<double, std::micro>(end - begin).count();
  char line[256];
  std::snprintf(line, sizeof line,
                "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                "\"args\":{\"bucket\":%d,\"round\":%llu}}",
                name, track_id(track), ts, dur, track.bucket,
                static_cast<unsigned long long>(round));
  append(line);
}

void Timeline::instant(TimelineTrack track, const char *name, uint64_t round,
                       TimelineClock::time_point at) {
  if (!enabled()) return;
  const double ts = std::chrono::duration<double, std::micro>(at - epoch_).count();
  char line[256];
  std::snprintf(line, sizeof line,
                "{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,"
                "\"args\":{\"bucket\":%d,\"round\":%llu}}",
                name, track_id(track), ts, track.bucket, static_cast<unsigned long long>(round));
  append(line);
}

void Timeline::name_track(TimelineTrack track) {
  if (!enabled()) return;
  char line[256];
  std::snprintf(line, sizeof line,
                "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
                "\"args\":{\"name\":\"comm %d bucket %d\"}}",
                track_id(track), track.comm, track.bucket);
  append(line);
}

std::string Timeline::rank_path(const std::string &path, int rank) {
  const std::string suffix = ".json";
  const std::string tag = ".rank" + std::to_string(rank);
  if (path.size() > suffix.size() && path.ends_with(suffix))
    return path.substr(0, path.size() - suffix.size()) + tag + suffix;
  return path + tag + suffix;
}

Status Timeline::write(int rank) {
  if (!enabled()) return BAGUA_SUCCESS;
  const std::string file = rank_path(path_, rank);
  std::FILE *f = std::fopen(file.c_str(), "w");
  if (f == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "BAGUA_TIMELINE: cannot write '%s'", file.c_str());
  std::lock_guard lock(mutex);
  std::fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  // One event per line, comma-separated.
  for (size_t i = 0; i < events.size(); ++i)
    std::fprintf(f, "%s%s\n", events[i].c_str(), i + 1 < events.size() ? "," : "");
  std::fprintf(f, "]}\n");
  const bool ok = std::fclose(f) == 0;
  if (!ok)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "BAGUA_TIMELINE: writing '%s' failed", file.c_str());
  return BAGUA_SUCCESS;
}

}  // namespace bagua
