// Short data-parallel runs on Fashion-MNIST (2 ranks): every algorithm lowers the loss well
// below its start, and exact and centralized compressed ones leave bit-identical weights on all
// ranks.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <string>

#include "algorithm.hpp"
#include "idx.hpp"
#include "trainer.hpp"

namespace {

constexpr const char *kData = "/usr/share/datasets/fashion-mnist";

const train::Dataset &train_set() {
  static const train::Dataset d = train::load_fashion_mnist(kData, "train");
  return d;
}
const train::Dataset &test_set() {
  static const train::Dataset d = train::load_fashion_mnist(kData, "t10k");
  return d;
}

// A few hundred steps of a small model: enough to fall far below the initial loss (ln 10).
train::TrainConfig short_run(const std::string &algorithm) {
  train::TrainConfig c;
  c.algorithm = algorithm;
  c.hidden = 64;
  c.batch = 32;
  c.max_steps = 300;
  c.lr = 0.05f;
  c.cosine_schedule = false;
  c.test_limit = 1000;
  c.settings.async_interval_ms = 5;
  return c;
}

// Exact and centralized compressed averaging: every rank applies the same update.
bool is_centralized(const std::string &name) {
  for (const char *c : {"allreduce", "q8", "q4", "fp16", "sign", "decentralized-all"})
    if (name == c) return true;
  return false;
}

train::TrainResult run(const train::TrainConfig &c) {
  return train::run_training(c, train_set(), test_set(), MPI_COMM_WORLD, nullptr);
}

}  // namespace

TEST_CASE("every algorithm lowers the loss well below its start") {
  for (const train::AlgorithmInfo &a : train::algorithm_list()) {
    DYNAMIC_SECTION(a.name) {
      const train::TrainResult r = run(short_run(a.name));
      INFO(a.name << ": loss " << r.first_loss << " -> " << r.last_loss);
      REQUIRE(r.steps == 300);
      REQUIRE(r.first_loss > 1.5);  // the first steps start near ln 10 = 2.30
      REQUIRE(r.last_loss < 0.5 * r.first_loss);
      REQUIRE(r.points.back().test_accuracy > 40.0);  // chance is 10%
      REQUIRE(r.points.back().bytes_per_rank > 0);
      if (is_centralized(a.name)) REQUIRE(r.centralized);
      if (r.centralized) REQUIRE(r.replicas_identical);
    }
  }
}

TEST_CASE("the same seed gives the same weights; another seed different ones") {
  train::TrainConfig c = short_run("allreduce");
  c.max_steps = 50;
  const uint64_t first = run(c).weights_checksum;
  REQUIRE(run(c).weights_checksum == first);
  c.seed = 2;
  REQUIRE(run(c).weights_checksum != first);
}

TEST_CASE("evaluating the ranks' average weights leaves each rank's own weights unchanged") {
  // lowprec-ring keeps replicas that differ; evaluating every 9 steps averages them each time.
  train::TrainConfig c = short_run("lowprec-ring");
  c.max_steps = 60;
  c.evals_per_epoch = 100;
  c.evaluate_average = true;
  const train::TrainResult averaged = run(c);
  REQUIRE_FALSE(averaged.replicas_identical);
  c.evaluate_average = false;
  const train::TrainResult local = run(c);
  REQUIRE(averaged.weights_checksum == local.weights_checksum);
  REQUIRE(averaged.points.size() == local.points.size());
  REQUIRE(averaged.points.size() > 5);
}

TEST_CASE("unknown algorithms are refused with the list of available ones") {
  const train::TrainConfig c = short_run("no-such-algorithm");
  REQUIRE_THROWS_WITH(run(c), Catch::Contains("no-such-algorithm") &&
                                  Catch::Contains("allreduce") && Catch::Contains("partial"));
}

TEST_CASE("bucketed and flat gradient averaging agree") {
  // 4 buckets of the 784-64-64-10 model: {b3, W3, b2}, {W2 (16 KiB)}, {b1}, {W1 (196 KiB)}.
  train::TrainConfig bucketed = short_run("allreduce");
  bucketed.max_steps = 50;
  bucketed.settings.bucket_kb = 8;
  train::TrainConfig flat = bucketed;
  flat.settings.buckets = false;
  // On 2 ranks every exact allreduce adds the same two values, so the weights are bit-identical.
  REQUIRE(run(bucketed).weights_checksum == run(flat).weights_checksum);

  for (const char *name : {"q8", "q4", "fp16"}) {
    INFO(name);
    bucketed.algorithm = flat.algorithm = name;
    const train::TrainResult b = run(bucketed), f = run(flat);
    REQUIRE(b.replicas_identical);
    REQUIRE(f.replicas_identical);
    REQUIRE(b.last_loss < 0.8 * b.first_loss);
    // Buckets are compressed separately: a few more block headers, never much more traffic.
    REQUIRE(b.points.back().bytes_per_rank >= f.points.back().bytes_per_rank);
    REQUIRE(b.points.back().bytes_per_rank < f.points.back().bytes_per_rank * 11 / 10);
  }
}
