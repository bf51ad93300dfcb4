// Data-parallel training of the MLP on Fashion-MNIST with one bagua algorithm.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithm.hpp"
#include "idx.hpp"

namespace train {

struct TrainConfig {
  std::string algorithm = "allreduce";
  int epochs = 10;
  int batch = 64;  // per rank
  float lr = 0.1f;
  bool cosine_schedule = true;  // lr follows a cosine from lr to 0 over the run
  float momentum = 0.9f;
  int hidden = 128;
  int hidden_layers = 2;
  uint64_t seed = 1;
  double target_accuracy = 85.0;  // percent, for time-to-accuracy
  double straggler_prob = 0.0;    // per rank and step
  double straggler_delay = 5.0;   // sleep, in multiples of the measured compute time of a step
  int max_steps = 0;              // stop after this many steps (0: run all epochs)
  int evals_per_epoch = 1;
  int test_limit = 0;  // evaluate on the first N test images (0: all)
  // Algorithms whose replicas differ (decentralized, async, partial): evaluate the average of
  // the ranks' weights (true), or each rank's own weights, reporting their mean accuracy.
  bool evaluate_average = true;
  AlgorithmSettings settings;
};

// One evaluation of the test set.
struct EvalPoint {
  int epoch = 0;              // 1-based epoch the evaluation ends
  double epoch_progress = 0;  // epochs done, fractional when evaluating within an epoch
  long step = 0;
  double wall_s = 0;            // training time so far (slowest rank), evaluations excluded
  double train_loss = 0;        // mean training loss since the previous evaluation, all ranks
  double test_accuracy = 0;     // percent
  uint64_t bytes_per_rank = 0;  // algorithm's wire bytes so far, mean over ranks
};

struct TrainResult {
  std::vector<EvalPoint> points;
  long steps = 0;
  double time_to_target_s = -1;      // wall_s of the first evaluation at or above target; -1: never
  double compute_ms_per_step = 0;    // forward + backward + optimizer, mean over ranks
  double comm_ms_per_step = 0;       // in the algorithm's calls, mean over ranks
  double first_loss = 0;             // mean loss of the first 5 steps (all ranks)
  double last_loss = 0;              // mean loss of the last 20 steps (all ranks)
  bool centralized = false;          // the algorithm keeps replicas bit-identical by design
  bool replicas_identical = false;   // every rank holds bit-identical weights at the end
  uint64_t weights_checksum = 0;     // FNV-1a of rank 0's weights
  std::vector<size_t> bucket_bytes;  // bucketed algorithms: each bucket's bytes at the end
};

// Called on every rank after each evaluation (rank 0 prints).
using ProgressFn = std::function<void(const EvalPoint &)>;

// Trains on `comm` (collective): rank r uses the r-th of n interleaved shards of a per-epoch
// shuffle of `train_set`; the test set is sharded over the ranks, each rank evaluating its
// weights (or their average over the ranks, see evaluate_average) on its shard, and the correct
// counts summed. Throws AlgorithmError when a bagua call fails.
TrainResult run_training(const TrainConfig &config, const Dataset &train_set,
                         const Dataset &test_set, MPI_Comm comm, const ProgressFn &progress);

}  // namespace train
