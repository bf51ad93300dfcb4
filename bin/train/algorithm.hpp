// How a data-parallel step shares information between ranks. One small class per bagua
// algorithm: gradient-averaging algorithms act after backward, weight-averaging algorithms
// after the optimizer step.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace train {

// A bagua call failed, or the algorithm name / settings are unusable.
class AlgorithmError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Settings some algorithms take (ignored by the others).
struct AlgorithmSettings {
  int partial_group = 0;       // partial reduce group size P; 0 = bagua's default (half the ranks)
  int interval = 1;            // decentralized / low-precision: communicate every k steps
  int async_interval_ms = 20;  // async model averaging: pause between rounds
  // async: SGD momentum in place of the configured one. Stale averaging acts as extra, implicit
  // momentum ("asynchrony begets momentum", Mitliagkas et al. 2016), so async needs less.
  float async_momentum = 0.8f;
  // gradient allreduces (every algorithm without state): through bagua's bucketed communicator
  // (per-tensor ready marks during backward) with buckets of at most bucket_kb KiB; false: one flat
  // plain call after backward.
  bool buckets = true;
  int bucket_kb = 64;
};

// One parameter tensor's gradient inside the model's flat gradient buffer, whose address stays
// valid for the whole run.
struct GradientTensor {
  int layer;  // 0 = input layer
  bool bias;  // bias (else weight) gradient
  std::span<float> values;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Called with the weights before forward (asynchronous averaging refreshes them here).
  virtual void before_forward(std::span<float> weights) { (void)weights; }
  // Called during backward as soon as one gradient tensor (given to make_algorithm) is final;
  // its memory must then not be written until after_backward returns.
  virtual void gradient_ready(int layer, bool bias) {
    (void)layer;
    (void)bias;
  }
  // Called with the local gradient after backward; leaves the gradient to apply in place.
  virtual void after_backward(std::span<float> grads) { (void)grads; }
  // Called with the weights after the optimizer step; may average them with peers.
  virtual void after_step(std::span<float> weights) { (void)weights; }
  // Called on every rank before the trainer itself synchronises the ranks (evaluation, end of
  // training): background or uncoordinated communication stops until the next step.
  virtual void pause() {}

  // Bytes this rank has put on the wire so far, from the algorithm's known message sizes
  // (counted, not measured).
  virtual uint64_t bytes_sent() const = 0;
  // True when after_backward should receive the local momentum (mu v + g) instead of the
  // gradient; the result, the ranks' averaged momentum, then replaces the local momentum and is
  // applied as the step (1-bit Adam's scheme). Error-feedback compression (1-bit) stalls when
  // momentum is applied after it, and loses accuracy when each rank keeps its own momentum.
  virtual bool communicates_momentum() const { return false; }
  // True when every rank holds bit-identical weights after each step (centralized averaging).
  virtual bool keeps_replicas_identical() const = 0;
  // Bucketed algorithms: the gradient bytes of each bucket now (after an automatic bucket size
  // has settled, the buckets it kept); others: empty.
  virtual std::vector<size_t> bucket_bytes() const { return {}; }
};

// An available algorithm: its command-line name and a one-line description.
struct AlgorithmInfo {
  const char *name;
  const char *description;
};
// All algorithms, in the order of the comparison table.
std::vector<AlgorithmInfo> algorithm_list();

// The algorithm `name` for `count` floats starting from `initial_weights`, communicating on
// `comm` (collective over comm). `gradients` lists the gradient's tensors in the order backward
// produces them (bucketed algorithms register them in this order). Throws AlgorithmError listing
// the available names when `name` is unknown, or carrying bagua's message when a call fails.
std::unique_ptr<Algorithm> make_algorithm(const std::string &name, MPI_Comm comm,
                                          std::span<const float> initial_weights,
                                          std::span<const GradientTensor> gradients,
                                          const AlgorithmSettings &settings);

// The SGD momentum algorithm `name` trains with, given the configured `momentum`.
float training_momentum(const std::string &name, float momentum, const AlgorithmSettings &settings);

}  // namespace train
