#include "trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

#include "mlp.hpp"

namespace train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Uniform double in [0, 1) from a 64-bit generator (implementation-independent).
double uniform01(std::mt19937_64 &gen) { return double(gen() >> 11) * 0x1.0p-53; }

// The same permutation of 0..count-1 on every rank for a given (seed, epoch).
std::vector<int> shuffled(int count, uint64_t seed, int epoch) {
  std::vector<int> perm(count);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch));
  // Fisher-Yates, drawing with a fixed transform so the order never depends on the library.
  for (int i = count - 1; i > 0; --i) std::swap(perm[i], perm[gen() % uint64_t(i + 1)]);
  return perm;
}

// SGD with momentum (PyTorch's form): v = mu v + g; w -= lr v. Split in two halves for
// algorithms that communicate v instead of g.
class MomentumSgd {
 public:
  MomentumSgd(size_t count, float momentum) : v_(count, 0.0f), mu_(momentum) {}
  // g <- v = mu v + g.
  void momentum_into(std::span<float> g) {
    for (size_t i = 0; i < g.size(); ++i) g[i] = v_[i] = mu_ * v_[i] + g[i];
  }
  // v <- the ranks' averaged momentum (1-bit Adam's update of the local state).
  void set_momentum(std::span<const float> m) { std::copy(m.begin(), m.end(), v_.begin()); }
  // w -= lr d.
  void descend(std::span<float> w, std::span<const float> d, float lr) const {
    for (size_t i = 0; i < w.size(); ++i) w[i] -= lr * d[i];
  }

 private:
  std::vector<float> v_;
  float mu_;
};

// Straggler injection: after a warm-up that measures this rank's mean compute time of a step,
// each step sleeps `factor` times that with probability `prob`.
class Straggler {
 public:
  static constexpr int kWarmupSteps = 20;
  Straggler(double prob, double factor, uint64_t seed, int rank)
      : prob_(prob), factor_(factor), gen_(seed * 7919 + uint64_t(rank) + 1) {}
  // `compute_s`: this step's compute time, measured without the communication.
  void after_step(double compute_s) {
    if (prob_ <= 0) return;
    if (warmup_steps_ < kWarmupSteps) {
      warmup_s_ += compute_s;
      ++warmup_steps_;
      return;
    }
    if (uniform01(gen_) < prob_)
      std::this_thread::sleep_for(
          std::chrono::duration<double>(factor_ * warmup_s_ / kWarmupSteps));
  }

 private:
  double prob_, factor_;
  std::mt19937_64 gen_;
  int warmup_steps_ = 0;
  double warmup_s_ = 0;
};

uint64_t fnv1a(std::span<const float> values) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto *bytes = reinterpret_cast<const unsigned char *>(values.data());
  for (size_t i = 0; i < values.size_bytes(); ++i) h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

double sum_over_ranks(double v, MPI_Comm comm) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_SUM, comm);
  return out;
}
double max_over_ranks(double v, MPI_Comm comm) {
  double out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, comm);
  return out;
}

// Correct predictions of this rank's weights on its contiguous shard of the test set.
int count_correct_on_shard(Mlp &model, const Dataset &test, int limit, int rank, int n) {
  constexpr int kEvalBatch = 1000;
  const int total = limit > 0 ? std::min(limit, test.rows) : test.rows;
  const int begin = int(int64_t(total) * rank / n), end = int(int64_t(total) * (rank + 1) / n);
  std::vector<int> indices;
  std::vector<float> x(size_t(kEvalBatch) * test.cols);
  std::vector<uint8_t> y(kEvalBatch);
  int correct = 0;
  for (int first = begin; first < end; first += kEvalBatch) {
    const int rows = std::min(kEvalBatch, end - first);
    indices.resize(rows);
    std::iota(indices.begin(), indices.end(), first);
    test.gather(indices, x.data(), y.data());
    correct += model.count_correct(x.data(), y.data(), rows);
  }
  return correct;
}

// Running sums of one rank between evaluations, and over the whole run.
struct Tally {
  double loss_sum = 0;
  long loss_steps = 0;
  double compute_s = 0, comm_s = 0;
  std::vector<float> losses;  // every step's loss, for first/last windows
};

class Run {
 public:
  Run(const TrainConfig &config, const Dataset &train_set, const Dataset &test_set, MPI_Comm comm,
      const ProgressFn &progress)
      : config_(config),
        train_(train_set),
        test_(test_set),
        comm_(comm),
        progress_(progress),
        model_({train_set.cols, config.hidden, 10, config.hidden_layers}, config.seed),
        sgd_(model_.param_count(),
             training_momentum(config.algorithm, config.momentum, config.settings)) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    straggler_.emplace(config.straggler_prob, config.straggler_delay, config.seed, rank_);
    algorithm_ = make_algorithm(config.algorithm, comm, model_.params(), gradient_tensors(),
                                config.settings);
    steps_per_epoch_ = train_set.rows / (size_ * config.batch);
    if (steps_per_epoch_ == 0)
      throw AlgorithmError("batch " + std::to_string(config.batch) + " x " + std::to_string(size_) +
                           " ranks exceeds the " + std::to_string(train_set.rows) +
                           " training images");
  }

  TrainResult run() {
    const int eval_every = std::max(1, steps_per_epoch_ / std::max(1, config_.evals_per_epoch));
    segment_start_ = Clock::now();
    // Each epoch: a fresh shuffle, rank r taking every n-th image of it, one step per batch.
    for (int epoch = 0; epoch < config_.epochs && !out_of_steps(); ++epoch) {
      const std::vector<int> perm = shuffled(train_.rows, config_.seed, epoch);
      for (int s = 0; s < steps_per_epoch_ && !out_of_steps(); ++s) {
        train_step(perm, s);
        if ((s + 1) % eval_every == 0 || s + 1 == steps_per_epoch_ || out_of_steps())
          evaluate(epoch, double(epoch) + double(s + 1) / steps_per_epoch_);
      }
    }
    return finish();
  }

 private:
  long total_steps() const {
    const long planned = long(config_.epochs) * steps_per_epoch_;
    return config_.max_steps > 0 ? std::min<long>(planned, config_.max_steps) : planned;
  }

  // Cosine annealing from lr to 0 over the run, or constant.
  float learning_rate() const {
    if (!config_.cosine_schedule) return config_.lr;
    return float(0.5 * config_.lr * (1.0 + std::cos(M_PI * double(step_) / total_steps())));
  }

  // The model's gradient tensors in the order backward computes them: last layer first, each
  // layer's bias before its weights.
  std::vector<GradientTensor> gradient_tensors() {
    std::vector<GradientTensor> tensors;
    for (int l = model_.layers() - 1; l >= 0; --l) {
      tensors.push_back({l, true, model_.bias_grads(l)});
      tensors.push_back({l, false, model_.weight_grads(l)});
    }
    return tensors;
  }

  bool out_of_steps() const { return config_.max_steps > 0 && step_ >= config_.max_steps; }

  void train_step(const std::vector<int> &perm, int s) {
    const int b = config_.batch;
    batch_indices_.resize(b);
    for (int i = 0; i < b; ++i) batch_indices_[i] = perm[(size_t(s) * b + i) * size_ + rank_];
    x_.resize(size_t(b) * train_.cols);
    y_.resize(b);

    const auto t0 = Clock::now();
    algorithm_->before_forward(model_.params());
    const auto t1 = Clock::now();
    train_.gather(batch_indices_, x_.data(), y_.data());
    // Each gradient tensor is handed to the algorithm as soon as backward has computed it.
    const float loss = model_.train_batch(x_.data(), y_.data(), b, [this](int layer, bool bias) {
      algorithm_->gradient_ready(layer, bias);
    });
    const bool momentum_first = algorithm_->communicates_momentum();
    if (momentum_first) sgd_.momentum_into(model_.grads());
    const auto t2 = Clock::now();
    algorithm_->after_backward(model_.grads());
    const auto t3 = Clock::now();
    // The averaged gradient goes into the momentum; an averaged momentum replaces it.
    if (momentum_first)
      sgd_.set_momentum(model_.grads());
    else
      sgd_.momentum_into(model_.grads());
    sgd_.descend(model_.params(), model_.grads(), learning_rate());
    const auto t4 = Clock::now();
    algorithm_->after_step(model_.params());
    const auto t5 = Clock::now();

    const double compute = seconds_between(t1, t2) + seconds_between(t3, t4);
    tally_.compute_s += compute;
    tally_.comm_s += seconds_between(t0, t1) + seconds_between(t2, t3) + seconds_between(t4, t5);
    tally_.loss_sum += loss;
    ++tally_.loss_steps;
    tally_.losses.push_back(loss);
    straggler_->after_step(compute);
    ++step_;
  }

  // Stops the clock, evaluates every rank's weights on its test shard, reports, restarts.
  void evaluate(int epoch, double progress) {
    algorithm_->pause();
    train_s_ += seconds_between(segment_start_, Clock::now());
    const int correct = count_correct();
    const int tested =
        config_.test_limit > 0 ? std::min(config_.test_limit, test_.rows) : test_.rows;

    EvalPoint p;
    p.epoch = epoch + 1;
    p.epoch_progress = progress;
    p.step = step_;
    p.wall_s = max_over_ranks(train_s_, comm_);
    p.train_loss = sum_over_ranks(tally_.loss_sum, comm_) /
                   std::max(1.0, sum_over_ranks(double(tally_.loss_steps), comm_));
    p.test_accuracy = 100.0 * sum_over_ranks(correct, comm_) / tested;
    p.bytes_per_rank = uint64_t(sum_over_ranks(double(algorithm_->bytes_sent()), comm_) / size_);
    points_.push_back(p);
    if (result_.time_to_target_s < 0 && p.test_accuracy >= config_.target_accuracy)
      result_.time_to_target_s = p.wall_s;
    tally_.loss_sum = 0;
    tally_.loss_steps = 0;
    if (progress_) progress_(p);
    segment_start_ = Clock::now();
  }

  // Correct answers on this rank's test shard, with the ranks' average weights when replicas
  // differ and config_.evaluate_average is set (this rank's own weights are restored after).
  int count_correct() {
    const bool average = config_.evaluate_average && !algorithm_->keeps_replicas_identical();
    if (!average) return count_correct_on_shard(model_, test_, config_.test_limit, rank_, size_);
    std::span<float> w = model_.params();
    const std::vector<float> own(w.begin(), w.end());
    MPI_Allreduce(MPI_IN_PLACE, w.data(), int(w.size()), MPI_FLOAT, MPI_SUM, comm_);
    for (float &x : w) x /= float(size_);
    const int correct = count_correct_on_shard(model_, test_, config_.test_limit, rank_, size_);
    std::copy(own.begin(), own.end(), w.begin());
    return correct;
  }

  // Mean of the losses in [first, last) over all ranks.
  double mean_loss(size_t first, size_t last) {
    double sum = 0;
    for (size_t i = first; i < last; ++i) sum += tally_.losses[i];
    return sum_over_ranks(sum, comm_) / sum_over_ranks(double(last - first), comm_);
  }

  TrainResult finish() {
    // Few first steps (the loss falls fast), more last ones (smoother).
    constexpr size_t kFirstWindow = 5, kLastWindow = 20;
    algorithm_->pause();
    result_.points = points_;
    result_.steps = step_;
    const double steps = std::max<long>(1, step_);
    result_.compute_ms_per_step = 1000.0 * sum_over_ranks(tally_.compute_s, comm_) / size_ / steps;
    result_.comm_ms_per_step = 1000.0 * sum_over_ranks(tally_.comm_s, comm_) / size_ / steps;
    const size_t n = tally_.losses.size();
    result_.first_loss = mean_loss(0, std::min(kFirstWindow, n));
    result_.last_loss = mean_loss(n - std::min(kLastWindow, n), n);

    // Identical weights everywhere iff the smallest and largest checksum agree.
    unsigned long long hash = fnv1a(model_.params()), lo = 0, hi = 0;
    MPI_Allreduce(&hash, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm_);
    MPI_Allreduce(&hash, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_);
    MPI_Bcast(&hash, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_);
    result_.replicas_identical = lo == hi;
    result_.centralized = algorithm_->keeps_replicas_identical();
    result_.weights_checksum = hash;
    result_.bucket_bytes = algorithm_->bucket_bytes();
    return result_;
  }

  const TrainConfig &config_;
  const Dataset &train_, &test_;
  MPI_Comm comm_;
  const ProgressFn &progress_;
  int rank_ = 0, size_ = 1;
  Mlp model_;
  MomentumSgd sgd_;
  std::optional<Straggler> straggler_;
  std::unique_ptr<Algorithm> algorithm_;
  int steps_per_epoch_ = 0;
  long step_ = 0;
  Clock::time_point segment_start_;
  double train_s_ = 0;
  Tally tally_;
  std::vector<EvalPoint> points_;
  TrainResult result_;
  std::vector<int> batch_indices_;
  std::vector<float> x_;
  std::vector<uint8_t> y_;
};

}  // namespace

TrainResult run_training(const TrainConfig &config, const Dataset &train_set,
                         const Dataset &test_set, MPI_Comm comm, const ProgressFn &progress) {
  return Run(config, train_set, test_set, comm, progress).run();
}

}  // namespace train
