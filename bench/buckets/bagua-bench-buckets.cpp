// Overlap of gradient communication with a synthetic backward pass.
//
// The "model" has L layers of P float32 gradients each. Backward computes
// the layers last to first for a fixed time each (a sleep: it emulates
// accelerator work that leaves the CPU to the communication threads), then
// the gradients are averaged with a bucketed communicator:
//   after:   mark every layer ready when backward is done, then wait_all;
//   overlap: mark each layer ready as soon as it is computed, then wait_all.
// Both use the same buckets and algorithm, so the ratio of iteration times
// is the gain of overlapping. By default the per-layer compute time is
// calibrated so that backward takes as long as communication (the case the
// goal of >= 1.5x refers to; the ideal is 2x). The overlap fraction (the
// share of communication time, union over buckets, that ran before backward
// ended) is computed from the BAGUA_TIMELINE file of rank 0.
//
// usage: bagua-bench-buckets [--layers L] [--floats P] [--bucket-bytes B]
//                            [--compute-ms C] [--iters N]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bagua.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Settings {
  int layers = 16;
  int floats = 262144;  // 1 MiB per layer
  size_t bucket_bytes = 2u << 20;
  double compute_ms = -1;  // < 0: calibrate to the communication time
  int iters = 5;
};

Settings parse(int argc, char **argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char *value = argv[i + 1];
    if (key == "--layers")
      s.layers = std::atoi(value);
    else if (key == "--floats")
      s.floats = std::atoi(value);
    else if (key == "--bucket-bytes")
      s.bucket_bytes = std::strtoull(value, nullptr, 10);
    else if (key == "--compute-ms")
      s.compute_ms = std::atof(value);
    else if (key == "--iters")
      s.iters = std::atoi(value);
  }
  return s;
}

void check(int rc, const char *what) {
  if (rc == BAGUA_SUCCESS) return;
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, bagua_error_string(rc), bagua_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// The model's gradients on a bucketed communicator; layers are registered
// last first, the order backward produces them.
struct Model {
  std::vector<std::vector<float>> grads;
  bagua_bucket_comm_t bc = nullptr;
  int buckets = 0;

  explicit Model(const Settings &s) : grads(static_cast<size_t>(s.layers)) {
    bagua_bucket_config config;
    check(bagua_bucket_config_init(&config), "config_init");
    config.bucket_bytes = s.bucket_bytes;
    check(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc), "create");
    int id = 0;
    for (int layer = s.layers - 1; layer >= 0; --layer) {
      grads[layer].assign(static_cast<size_t>(s.floats), 1.0f);
      check(bagua_bucket_comm_register(bc, grads[layer].data(), s.floats, MPI_FLOAT, &id),
            "register");
    }
    check(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets), "finalize");
  }
  ~Model() { bagua_bucket_comm_destroy(&bc); }
};

// One iteration; returns its time in ms, the slowest rank's.
double iteration(Model &m, const Settings &s, double compute_ms, bool overlap) {
  MPI_Barrier(MPI_COMM_WORLD);
  const auto begin = Clock::now();
  const auto compute = std::chrono::duration<double, std::milli>(compute_ms);
  // Backward: layer L-1 first; tensor id k is layer L-1-k.
  for (int k = 0; k < s.layers; ++k) {
    if (compute_ms > 0) std::this_thread::sleep_for(compute);
    if (overlap) check(bagua_bucket_comm_mark_ready(m.bc, k), "mark_ready");
  }
  if (!overlap)
    for (int k = 0; k < s.layers; ++k) check(bagua_bucket_comm_mark_ready(m.bc, k), "mark_ready");
  check(bagua_bucket_comm_wait_all(m.bc), "wait_all");
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count(), worst = 0;
  MPI_Allreduce(&ms, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

double median_iteration(Model &m, const Settings &s, double compute_ms, bool overlap) {
  iteration(m, s, compute_ms, overlap);  // warm-up
  std::vector<double> t;
  for (int i = 0; i < s.iters; ++i) t.push_back(iteration(m, s, compute_ms, overlap));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double number_after(const std::string &line, const char *key) {
  const size_t at = line.find(key);
  return at == std::string::npos ? -1 : std::atof(line.c_str() + at + std::strlen(key));
}

// Per round of bucketed communicator `comm`: the union of the buckets'
// [start, end] spans, and the part of it before the round's last "ready".
double overlap_fraction(const std::string &file, int comm) {
  struct Round {
    double backward_end = 0;
    std::vector<std::pair<double, double>> spans;
  };
  std::map<int, Round> rounds;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    const int tid = static_cast<int>(number_after(line, "\"tid\":"));
    if (tid < 0 || tid / 100000 != comm) continue;
    Round &r = rounds[static_cast<int>(number_after(line, "\"round\":"))];
    const double ts = number_after(line, "\"ts\":");
    if (line.find("\"name\":\"ready\"") != std::string::npos)
      r.backward_end = std::max(r.backward_end, ts);
    if (line.find("\"name\":\"bucket\"") != std::string::npos)
      r.spans.emplace_back(ts, ts + number_after(line, "\"dur\":"));
  }
  double overlapped = 0, total = 0;
  for (auto &[number, r] : rounds) {
    if (number == 0) continue;  // warm-up
    // Union of the spans, and its part before backward ended.
    std::sort(r.spans.begin(), r.spans.end());
    double end = -1;
    for (auto [a, b] : r.spans) {
      a = std::max(a, end);
      if (b <= a) continue;
      total += b - a;
      overlapped += std::max(0.0, std::min(b, r.backward_end) - a);
      end = b;
    }
  }
  return total > 0 ? overlapped / total : 0;
}

}  // namespace

int main(int argc, char **argv) {
  // Rank 0 reads the timeline back; keep the user's path if given.
  const char *given = std::getenv("BAGUA_TIMELINE");
  const std::string timeline = given && *given ? given : "/tmp/bagua-bench-buckets.json";
  setenv("BAGUA_TIMELINE", timeline.c_str(), 1);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Settings s = parse(argc, argv);

  double comm_ms = 0, compute_ms = s.compute_ms, after_ms = 0, overlap_ms = 0;
  int buckets = 0;
  {
    Model m(s);  // bucketed communicator 0 of the timeline
    buckets = m.buckets;
    comm_ms = median_iteration(m, s, 0, false);
    if (compute_ms < 0) compute_ms = comm_ms / s.layers;
    after_ms = median_iteration(m, s, compute_ms, false);
  }
  {
    Model m(s);  // bucketed communicator 1
    overlap_ms = median_iteration(m, s, compute_ms, true);
  }
  if (rank == 0) {
    const double backward = compute_ms * s.layers;
    const double ideal = (backward + comm_ms) / std::max(backward, comm_ms);
    const std::string file = timeline.size() > 5 && timeline.ends_with(".json")
                                 ? timeline.substr(0, timeline.size() - 5) + ".rank0.json"
                                 : timeline + ".rank0.json";
    std::printf("ranks %d, %d layers x %d floats (%.1f MiB), %d buckets of <= %zu bytes\n", size,
                s.layers, s.floats, s.layers * double(s.floats) * 4 / (1 << 20), buckets,
                s.bucket_bytes);
    std::printf("communication alone        %9.2f ms\n", comm_ms);
    std::printf("backward compute           %9.2f ms (%.3f ms per layer)\n", backward, compute_ms);
    std::printf("after backward (no overlap)%9.2f ms/iter\n", after_ms);
    std::printf("bucketed overlap           %9.2f ms/iter\n", overlap_ms);
    std::printf("speedup                    %9.2fx (ideal %.2fx)\n", after_ms / overlap_ms, ideal);
    std::printf("overlap fraction, overlap  %9.2f (timeline %s)\n", overlap_fraction(file, 1),
                file.c_str());
    std::printf("overlap fraction, after    %9.2f\n", overlap_fraction(file, 0));
  }
  bagua_finalize();
  MPI_Finalize();
  return 0;
}
