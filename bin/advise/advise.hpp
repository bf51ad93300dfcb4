// bagua-advise (doc/tools.md, "bagua-advise"): measures what the cost model needs on this
// cluster (latency and bandwidth inside and between nodes, the all-to-all
// efficiency, the overlap of compute and transfer, codec and sum rates),
// then predicts every algorithm's time per step with cost_model.hpp.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "cost_model.hpp"

namespace bagua::advise {

struct Args {
  size_t model_bytes = 0;   // --model-bytes, required
  int ranks_per_node = 0;   // --ranks-per-node; 0: ranks sharing memory form a node
  int predict_ranks = 0;    // --predict-ranks; 0: no extrapolation
  bool csv = false;         // --csv: machine-readable rows
  double race_seconds = 2;  // --race-seconds: the most the race of close rows may take; 0: none
};

// Parses the command line; a bad argument fails naming it (exit status 2).
Status parse_args(int argc, const char *const *argv, Args *out);
const char *usage();

// What was measured, with the notes that say how. raced: by index into
// algorithm_rows(), the median measured seconds of the rows raced (see
// race_candidates), 0 for the others; empty when there was no race.
struct Measurement {
  CostParams params;
  std::vector<std::string> notes;
  std::vector<double> raced;
};

// Collective over comm: measures in a few seconds. Every rank gets the same
// parameters (rank 0's link figures, the slowest rank's rates).
Status measure(MPI_Comm comm, const Args &args, Measurement *out);

struct Advice {
  std::vector<AlgorithmRow> rows;
  std::vector<Estimate> estimates;
  std::vector<double> raced;         // as Measurement::raced
  std::vector<size_t> reduce;        // the allreduce rows that apply (indices into rows)
  size_t recommended = 0;            // allreduce: recommend() on the raced times, if any
  size_t model_recommended = 0;      // allreduce: recommend() on the predictions
  size_t fastest = 0;                // allreduce predicted fastest
  size_t recommended_averaging = 0;  // averaging step
};

// Predicts every row for a float32 model of `model_bytes`; with `raced`
// (Measurement::raced), recommends the allreduce among the rows raced.
Advice advise(const CostParams &params, size_t model_bytes, const std::vector<double> &raced = {});

// Rows whose prediction lies within this fraction of the fastest
// allreduce's are raced: closer than the model separates them from one
// launch of its probes to the next (at 10 Gbit / 64 MiB it put the two
// 4-bit-or-smaller wires at 0.91-1.19 of each other's time where the calls
// measured 1.11-1.32, doc/benchmarks.md, "What was tried").
constexpr double kRaceFraction = 0.25;

// The allreduce rows of `a` to race (indices into a.rows): those predicted
// within kRaceFraction of the fastest, when there are at least two and
// every one runs flat (exact ring or recursive doubling, ByteGrad); empty
// otherwise.
std::vector<size_t> race_candidates(const Advice &a);

// Times the library's calls of `rows` (indices into algorithm_rows(), flat
// allreduce rows) on `count` float32 elements: one warm-up round, then
// `rounds` rounds of one call of each in turn; *out is by row the median,
// 0 for the rows not raced (Measurement::raced). Collective over comm;
// measure() runs it on race_candidates.
Status race_rows(MPI_Comm comm, const std::vector<size_t> &rows, size_t count, int rounds,
                 std::vector<double> *out);

// The report (rank 0 prints it): table, recommendation, formula, and the
// extrapolation when args.predict_ranks is set.
void print_report(FILE *out, const Args &args, const Measurement &m);

}  // namespace bagua::advise
