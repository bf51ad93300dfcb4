#include "algorithm.hpp"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <string>
#include <utility>

#include "bagua.h"

namespace train {
namespace {

int comm_size(MPI_Comm comm) {
  int n = 1;
  MPI_Comm_size(comm, &n);
  return n;
}

// A failed call's status and bagua's message.
std::string describe(int status, const char *message) {
  return std::string(bagua_error_string(status)) + ": " + message;
}

// Throws AlgorithmError with bagua's message when a call failed.
void check(int status, const char *call) {
  if (status != BAGUA_SUCCESS)
    throw AlgorithmError(std::string(call) + " failed: " + describe(status, bagua_last_error()));
}

// Wire bytes, as bagua counts them: this rank's bytes in one allreduce of m floats, and the
// size of one message of m floats in a wire format.
uint64_t allreduce_bytes(bagua_algorithm algorithm, size_t m, MPI_Comm comm) {
  MPI_Count bytes = 0;
  check(bagua_allreduce_bytes(algorithm, MPI_Count(m), MPI_FLOAT, comm, &bytes),
        "bagua_allreduce_bytes");
  return uint64_t(bytes);
}
uint64_t message_bytes(bagua_algorithm algorithm, size_t m) {
  MPI_Count bytes = 0;
  check(bagua_encoded_bytes(algorithm, MPI_Count(m), MPI_FLOAT, &bytes), "bagua_encoded_bytes");
  return uint64_t(bytes);
}

// ---------------------------------------------------------------------------------------------
// Gradient averaging: one allreduce-like call on the flat gradient after backward.

class GradientAverage : public Algorithm {
 public:
  GradientAverage(MPI_Comm comm, bagua_algorithm algorithm) : comm_(comm), algorithm_(algorithm) {}
  void after_backward(std::span<float> grads) override {
    check(bagua_allreduce_alg(MPI_IN_PLACE, grads.data(), int(grads.size()), MPI_FLOAT, BAGUA_AVG,
                              comm_, algorithm_),
          "bagua_allreduce_alg");
    bytes_ += allreduce_bytes(algorithm_, grads.size(), comm_);
  }
  uint64_t bytes_sent() const override { return bytes_; }
  bool keeps_replicas_identical() const override { return true; }

 private:
  MPI_Comm comm_;
  bagua_algorithm algorithm_;
  uint64_t bytes_ = 0;
};

// Gradient averaging through bagua's bucketed communicator, as a framework backend does it:
// the gradient tensors are registered in the order backward produces them, each is marked ready
// as soon as backward has computed it (a bucket's collective starts in the background when its
// last tensor is marked, overlapping the backward of earlier layers), and after backward the
// trainer waits for all buckets before the optimizer step.
class BucketedGradientAverage : public Algorithm {
 public:
  BucketedGradientAverage(MPI_Comm comm, std::span<const GradientTensor> tensors,
                          bagua_algorithm algorithm, size_t bucket_bytes) {
    bagua_bucket_config config;
    check(bagua_bucket_config_init(&config), "bagua_bucket_config_init");
    config.bucket_bytes = bucket_bytes;
    config.algorithm = {algorithm, BAGUA_AVG};
    check(bagua_bucket_comm_create(comm, &config, &bc_), "bagua_bucket_comm_create");
    register_tensors(tensors);
    tensors_.assign(tensors.begin(), tensors.end());
    comm_ = comm;
    algorithm_ = algorithm;
  }
  ~BucketedGradientAverage() override { bagua_bucket_comm_destroy(&bc_); }

  void gradient_ready(int layer, bool bias) override {
    check(bagua_bucket_comm_mark_ready(bc_, ids_.at({layer, bias})),
          "bagua_bucket_comm_mark_ready");
  }
  void after_backward(std::span<float> grads) override {
    (void)grads;  // averaged in place, tensor by tensor
    check(bagua_bucket_comm_wait_all(bc_), "bagua_bucket_comm_wait_all");
    bytes_ += step_bytes();
  }
  uint64_t bytes_sent() const override { return bytes_; }
  bool keeps_replicas_identical() const override { return true; }
  std::vector<size_t> bucket_bytes() const override {
    std::vector<size_t> bytes;
    for (size_t count : bucket_counts()) bytes.push_back(count * sizeof(float));
    return bytes;
  }

 private:
  // Registers every tensor in backward order and forms the buckets.
  void register_tensors(std::span<const GradientTensor> tensors) {
    for (const GradientTensor &t : tensors) {
      int id = 0;
      check(bagua_bucket_comm_register(bc_, t.values.data(), int(t.values.size()), MPI_FLOAT, &id),
            "bagua_bucket_comm_register");
      ids_[{t.layer, t.bias}] = id;
    }
    int buckets = 0;  // bucket_counts() asks again: an automatic size changes them
    check(bagua_bucket_comm_finalize_registration(bc_, nullptr, &buckets),
          "bagua_bucket_comm_finalize_registration");
  }

  // The elements of each bucket now (an automatic bucket size changes the buckets in the
  // first steps).
  std::vector<size_t> bucket_counts() const {
    std::vector<size_t> counts;
    for (const GradientTensor &t : tensors_) {
      int bucket = 0;
      check(bagua_bucket_comm_tensor_bucket(bc_, ids_.at({t.layer, t.bias}), &bucket),
            "bagua_bucket_comm_tensor_bucket");
      if (size_t(bucket) >= counts.size()) counts.resize(size_t(bucket) + 1, 0);
      counts[size_t(bucket)] += t.values.size();
    }
    return counts;
  }

  // Each bucket runs one collective per step on all its tensors' elements (the buckets of
  // the step just waited for).
  uint64_t step_bytes() const {
    uint64_t bytes = 0;
    for (size_t count : bucket_counts())
      if (count > 0) bytes += allreduce_bytes(algorithm_, count, comm_);
    return bytes;
  }

  bagua_bucket_comm_t bc_ = nullptr;
  std::map<std::pair<int, bool>, int> ids_;  // (layer, bias) -> tensor id
  std::vector<GradientTensor> tensors_;      // a copy: the caller's list is temporary
  MPI_Comm comm_ = MPI_COMM_NULL;
  bagua_algorithm algorithm_ = BAGUA_ALGORITHM_EXACT;
  uint64_t bytes_ = 0;
};

// A gradient allreduce of any algorithm without state: bucketed unless
// settings say flat (or the bucketed communicator does not offer it).
std::unique_ptr<Algorithm> make_gradient_average(MPI_Comm comm,
                                                 std::span<const GradientTensor> gradients,
                                                 const AlgorithmSettings &settings,
                                                 bagua_algorithm algorithm) {
  if (!settings.buckets || !bagua_algorithm_offered(algorithm, "bucket"))
    return std::make_unique<GradientAverage>(comm, algorithm);
  return std::make_unique<BucketedGradientAverage>(comm, gradients, algorithm,
                                                   size_t(settings.bucket_kb) * 1024);
}

// 1-bit sign allreduce keeps error-feedback residuals between steps; it averages the ranks'
// momenta (as 1-bit Adam does) rather than their gradients.
class SignAverage : public Algorithm {
 public:
  SignAverage(MPI_Comm comm, size_t count) : comm_(comm) {
    check(bagua_sign_state_create(int(count), comm, &state_), "bagua_sign_state_create");
  }
  ~SignAverage() override { bagua_sign_state_destroy(&state_); }
  void after_backward(std::span<float> grads) override {
    check(bagua_allreduce_sign(MPI_IN_PLACE, grads.data(), int(grads.size()), MPI_FLOAT, BAGUA_AVG,
                               comm_, state_),
          "bagua_allreduce_sign");
    bytes_ += allreduce_bytes(BAGUA_ALGORITHM_SIGN, grads.size(), comm_);
  }
  bool communicates_momentum() const override { return true; }
  uint64_t bytes_sent() const override { return bytes_; }
  bool keeps_replicas_identical() const override { return true; }

 private:
  MPI_Comm comm_;
  bagua_sign_state_t state_ = nullptr;
  uint64_t bytes_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Weight averaging after the optimizer step.

// Synchronous decentralized averaging with peers (all, shift_one or ring).
class DecentralizedAverage : public Algorithm {
 public:
  DecentralizedAverage(MPI_Comm comm, bagua_peer_mode mode, int interval)
      : comm_(comm), mode_(mode), interval_(interval) {}
  void after_step(std::span<float> weights) override {
    check(bagua_decentralized_average(MPI_IN_PLACE, weights.data(), int(weights.size()), MPI_FLOAT,
                                      mode_, step_, interval_, comm_),
          "bagua_decentralized_average");
    if (step_ % interval_ == 0) bytes_ += round_bytes(weights.size());
    ++step_;
  }
  uint64_t bytes_sent() const override { return bytes_; }
  bool keeps_replicas_identical() const override { return mode_ == BAGUA_PEER_ALL; }

 private:
  // all: a ring allreduce; shift_one: the weights to one partner; ring: to both neighbours.
  uint64_t round_bytes(size_t count) const {
    const int n = comm_size(comm_);
    switch (mode_) {
      case BAGUA_PEER_ALL: return allreduce_bytes(BAGUA_ALGORITHM_EXACT, count, comm_);
      case BAGUA_PEER_SHIFT_ONE: return n > 1 ? message_bytes(BAGUA_ALGORITHM_EXACT, count) : 0;
      case BAGUA_PEER_RING: return message_bytes(BAGUA_ALGORITHM_EXACT, count) * std::min(n - 1, 2);
      default: return 0;
    }
  }

  MPI_Comm comm_;
  bagua_peer_mode mode_;
  int interval_;
  int step_ = 0;
  uint64_t bytes_ = 0;
};

// Ring averaging of compressed (q8) model differences.
class LowPrecisionRing : public Algorithm {
 public:
  LowPrecisionRing(MPI_Comm comm, std::span<const float> weights, int interval)
      : comm_(comm), interval_(interval) {
    check(bagua_lowprec_create(weights.data(), int(weights.size()), MPI_FLOAT, interval, comm,
                               &state_),
          "bagua_lowprec_create");
  }
  ~LowPrecisionRing() override { bagua_lowprec_destroy(&state_); }
  void after_step(std::span<float> weights) override {
    check(bagua_lowprec_step(state_, weights.data()), "bagua_lowprec_step");
    if (step_ % interval_ == 0)
      bytes_ +=
          message_bytes(BAGUA_ALGORITHM_Q8, weights.size()) * std::min(comm_size(comm_) - 1, 2);
    ++step_;
  }
  uint64_t bytes_sent() const override { return bytes_; }
  bool keeps_replicas_identical() const override { return false; }

 private:
  MPI_Comm comm_;
  int interval_;
  bagua_lowprec_t state_ = nullptr;
  int step_ = 0;
  uint64_t bytes_ = 0;
};

// Asynchronous model averaging: a bagua background thread averages `shared_` with all ranks;
// each step trains on a snapshot of it and adds its own update back under the lock.
class AsyncAverage : public Algorithm {
 public:
  AsyncAverage(MPI_Comm comm, std::span<const float> weights, int interval_ms)
      : comm_(comm), shared_(weights.begin(), weights.end()), snapshot_(weights.size()) {
    check(bagua_async_average_create(shared_.data(), int(shared_.size()), MPI_FLOAT, interval_ms,
                                     comm, &handle_),
          "bagua_async_average_create");
  }
  ~AsyncAverage() override { bagua_async_average_destroy(&handle_); }

  void before_forward(std::span<float> weights) override {
    if (paused_) {
      check(bagua_async_average_resume(handle_), "bagua_async_average_resume");
      paused_ = false;
    }
    check(bagua_async_average_lock(handle_), "bagua_async_average_lock");
    std::copy(shared_.begin(), shared_.end(), weights.begin());
    check(bagua_async_average_unlock(handle_), "bagua_async_average_unlock");
    std::copy(weights.begin(), weights.end(), snapshot_.begin());
  }
  // shared += (weights after the step) - (weights before it): this rank's own update.
  void after_step(std::span<float> weights) override {
    check(bagua_async_average_lock(handle_), "bagua_async_average_lock");
    for (size_t i = 0; i < shared_.size(); ++i) shared_[i] += weights[i] - snapshot_[i];
    check(bagua_async_average_unlock(handle_), "bagua_async_average_unlock");
  }
  void pause() override {
    if (paused_) return;
    check(bagua_async_average_abort(handle_), "bagua_async_average_abort");
    paused_ = true;
  }
  // Each round bagua applied is one exact allreduce of the weights and a stop flag.
  uint64_t bytes_sent() const override {
    long long rounds = 0;
    check(bagua_async_average_rounds(handle_, &rounds), "bagua_async_average_rounds");
    return uint64_t(rounds) * allreduce_bytes(BAGUA_ALGORITHM_EXACT, shared_.size() + 1, comm_);
  }
  bool keeps_replicas_identical() const override { return false; }

 private:
  MPI_Comm comm_;
  std::vector<float> shared_, snapshot_;
  bagua_async_t handle_ = nullptr;
  bool paused_ = false;
};

// Partial reduce: the first P ready ranks average their weights, overlapped with this rank's
// step as in D-PSGD's update x_{t+1} = average(x_t) - lr v_t: before the forward pass the
// weights x_t are copied and bagua_partial_reduce averages the copy on a background thread
// while forward, backward and the optimizer run on x_t; after the step the thread is joined
// and the group's average replaces x_t, keeping this rank's update (weights += average - x_t).
// Groups form without the other ranks' participation, so a rank that is in the trainer's own
// collectives (evaluation, end) must not be waited for: pause() leaves (bagua_partial_leave),
// and the next step's call takes part again.
class PartialReduce : public Algorithm {
 public:
  PartialReduce(MPI_Comm comm, size_t count, int group_size)
      : group_size_(group_size), snapshot_(count), average_(count) {
    MPI_Comm_dup(comm, &comm_);
  }
  ~PartialReduce() override {
    if (pending_.valid()) pending_.wait();
    MPI_Comm_free(&comm_);  // leaves implicitly
  }

  void before_forward(std::span<float> weights) override {
    taking_part_ = true;
    std::copy(weights.begin(), weights.end(), snapshot_.begin());
    pending_ = std::async(std::launch::async, [this] {
      const int status =
          bagua_partial_reduce(snapshot_.data(), average_.data(), int(snapshot_.size()), MPI_FLOAT,
                               group_size_, comm_, &info_);
      // bagua_last_error() is per thread: carry the message to the joining thread.
      return status == BAGUA_SUCCESS ? std::string() : describe(status, bagua_last_error());
    });
  }
  void after_step(std::span<float> weights) override {
    const std::string error = pending_.get();
    if (!error.empty()) throw AlgorithmError("bagua_partial_reduce failed: " + error);
    for (size_t i = 0; i < weights.size(); ++i) weights[i] += average_[i] - snapshot_[i];
    bytes_ += uint64_t(info_.bytes_sent);
  }
  void pause() override {
    if (!taking_part_) return;
    check(bagua_partial_leave(comm_), "bagua_partial_leave");
    taking_part_ = false;
  }
  uint64_t bytes_sent() const override { return bytes_; }
  bool keeps_replicas_identical() const override { return false; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool taking_part_ = false;  // a call since the last bagua_partial_leave
  int group_size_;
  std::vector<float> snapshot_, average_;
  bagua_group_info info_{};
  std::future<std::string> pending_;
  uint64_t bytes_ = 0;
};

// ---------------------------------------------------------------------------------------------

struct Entry {
  AlgorithmInfo info;
  std::function<std::unique_ptr<Algorithm>(
      MPI_Comm, std::span<const float>, std::span<const GradientTensor>, const AlgorithmSettings &)>
      make;
};

// The exact allreduce, then one gradient allreduce per algorithm the
// library lists without state (bagua_algorithm_name, in its order), then
// the methods with state or of their own.
void add_gradient_entries(std::vector<Entry> *entries) {
  static std::deque<std::string> texts;  // the entries' names and descriptions
  for (int a = 0; bagua_algorithm_name(bagua_algorithm(a)) != nullptr; ++a) {
    const auto algorithm = bagua_algorithm(a);
    if (bagua_algorithm_has_state(algorithm) || !bagua_algorithm_offered(algorithm, "allreduce"))
      continue;
    const std::string wire = bagua_algorithm_name(algorithm);
    texts.push_back(algorithm == BAGUA_ALGORITHM_EXACT ? "allreduce" : wire);
    const char *name = texts.back().c_str();
    texts.push_back(wire + " gradient allreduce (bucketed, or bagua_allreduce_alg; BAGUA_AVG)");
    entries->push_back({{name, texts.back().c_str()},
                        [algorithm](MPI_Comm c, std::span<const float>,
                                    std::span<const GradientTensor> g, const AlgorithmSettings &s) {
                          return make_gradient_average(c, g, s, algorithm);
                        }});
  }
}

std::vector<Entry> make_registry() {
  using W = std::span<const float>;
  using G = std::span<const GradientTensor>;
  using S = const AlgorithmSettings &;
  std::vector<Entry> entries;
  add_gradient_entries(&entries);
  const std::vector<Entry> others = {
      {{"sign", "1-bit sign gradient allreduce with error feedback (bagua_allreduce_sign)"},
       [](MPI_Comm c, W w, G, S) { return std::make_unique<SignAverage>(c, w.size()); }},
      {{"decentralized-all", "weights averaged with all ranks (bagua_decentralized_average)"},
       [](MPI_Comm c, W, G, S s) {
         return std::make_unique<DecentralizedAverage>(c, BAGUA_PEER_ALL, s.interval);
       }},
      {{"decentralized-shift", "weights averaged with one changing peer (shift_one)"},
       [](MPI_Comm c, W, G, S s) {
         return std::make_unique<DecentralizedAverage>(c, BAGUA_PEER_SHIFT_ONE, s.interval);
       }},
      {{"decentralized-ring", "weights averaged with ring neighbours"},
       [](MPI_Comm c, W, G, S s) {
         return std::make_unique<DecentralizedAverage>(c, BAGUA_PEER_RING, s.interval);
       }},
      {{"lowprec-ring", "ring averaging of q8-compressed weight differences (bagua_lowprec_*)"},
       [](MPI_Comm c, W w, G, S s) {
         return std::make_unique<LowPrecisionRing>(c, w, s.interval);
       }},
      {{"async", "asynchronous model averaging in a background thread (bagua_async_average_*)"},
       [](MPI_Comm c, W w, G, S s) {
         return std::make_unique<AsyncAverage>(c, w, s.async_interval_ms);
       }},
      {{"partial", "weights averaged among the first P ready ranks (bagua_partial_reduce)"},
       [](MPI_Comm c, W w, G, S s) {
         return std::make_unique<PartialReduce>(c, w.size(), s.partial_group);
       }},
  };
  entries.insert(entries.end(), others.begin(), others.end());
  return entries;
}

const std::vector<Entry> &registry() {
  static const std::vector<Entry> entries = make_registry();
  return entries;
}

}  // namespace

std::vector<AlgorithmInfo> algorithm_list() {
  std::vector<AlgorithmInfo> out;
  for (const Entry &e : registry()) out.push_back(e.info);
  return out;
}

float training_momentum(const std::string &name, float momentum,
                        const AlgorithmSettings &settings) {
  return name == "async" ? settings.async_momentum : momentum;
}

std::unique_ptr<Algorithm> make_algorithm(const std::string &name, MPI_Comm comm,
                                          std::span<const float> initial_weights,
                                          std::span<const GradientTensor> gradients,
                                          const AlgorithmSettings &settings) {
  for (const Entry &e : registry())
    if (name == e.info.name) return e.make(comm, initial_weights, gradients, settings);
  std::string names;
  for (const Entry &e : registry()) names += std::string(names.empty() ? "" : ", ") + e.info.name;
  throw AlgorithmError("unknown algorithm '" + name + "'; available: " + names);
}

}  // namespace train
