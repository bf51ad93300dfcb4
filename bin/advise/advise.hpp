// bagua-advise (doc/tools.md, "bagua-advise"): measures what the cost model needs on this
// cluster (latency and bandwidth inside and between nodes, the all-to-all
// efficiency, the overlap of compute and transfer, codec and sum rates),
// then predicts every algorithm's time per step with lib/core/cost_model.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.hpp"
#include "core/cost_model.hpp"

namespace bagua::advise {

struct Args {
  size_t model_bytes = 0;  // --model-bytes, required
  int ranks_per_node = 0;  // --ranks-per-node; 0: ranks sharing memory form a node
  int predict_ranks = 0;   // --predict-ranks; 0: no extrapolation
  bool csv = false;        // --csv: machine-readable rows
};

// Parses the command line; a bad argument fails naming it (exit status 2).
Status parse_args(int argc, const char *const *argv, Args *out);
const char *usage();

// What was measured, with the notes that say how.
struct Measurement {
  CostParams params;
  std::vector<std::string> notes;
};

// Collective over comm: measures in a few seconds. Every rank gets the same
// parameters (rank 0's link figures, the slowest rank's rates).
Status measure(MPI_Comm comm, const Args &args, Measurement *out);

struct Advice {
  std::vector<AlgorithmRow> rows;
  std::vector<Estimate> estimates;
  size_t recommended = 0;            // allreduce (index into rows; recommend())
  size_t fastest = 0;                // allreduce predicted fastest
  size_t recommended_averaging = 0;  // averaging step
};

// Predicts every row for a float32 model of `model_bytes`.
Advice advise(const CostParams &params, size_t model_bytes);

// The report (rank 0 prints it): table, recommendation, formula, and the
// extrapolation when args.predict_ranks is set.
void print_report(FILE *out, const Args &args, const Measurement &m);

}  // namespace bagua::advise
