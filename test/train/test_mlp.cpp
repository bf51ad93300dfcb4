// The trainer's perceptron at several depths: backward's gradient matches central finite
// differences of the loss, and each tensor is announced ready once, in backward order.
#include <catch2/catch.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "mlp.hpp"

namespace {

constexpr int kBatch = 3;

// A deterministic batch: inputs in [-1, 1], labels cycling through the classes.
struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> y;
};
Batch make_batch(const train::MlpShape &shape) {
  Batch b;
  for (int i = 0; i < kBatch * shape.inputs; ++i) b.x.push_back(float((i * 37) % 19) / 9.0f - 1.0f);
  for (int r = 0; r < kBatch; ++r) b.y.push_back(uint8_t(r % shape.classes));
  return b;
}

// The loss with parameter i moved by h (restored after).
double loss_at(train::Mlp &mlp, const Batch &b, size_t i, float h) {
  float &p = mlp.params()[i];
  const float saved = p;
  p = saved + h;
  const double loss = mlp.train_batch(b.x.data(), b.y.data(), kBatch);
  p = saved;
  return loss;
}

}  // namespace

TEST_CASE("backward's gradient matches finite differences at every depth") {
  const int hidden_layers = GENERATE(1, 2, 4);
  const train::MlpShape shape{6, 5, 4, hidden_layers};
  train::Mlp mlp(shape, 7);
  REQUIRE(mlp.layers() == hidden_layers + 1);
  const size_t expected_params = 6 * 5 + 5 + size_t(hidden_layers - 1) * (5 * 5 + 5) + 5 * 4 + 4;
  REQUIRE(mlp.param_count() == expected_params);

  const Batch b = make_batch(shape);
  mlp.train_batch(b.x.data(), b.y.data(), kBatch);
  const std::vector<float> grad(mlp.grads().begin(), mlp.grads().end());
  // Central differences: the error is O(h^2) plus the loss's rounding over 2h; h is small
  // enough that no unit of this batch crosses its ReLU kink.
  constexpr float h = 1e-3f;
  for (size_t i = 0; i < mlp.param_count(); ++i) {
    const double numeric = (loss_at(mlp, b, i, h) - loss_at(mlp, b, i, -h)) / (2.0 * h);
    INFO("parameter " << i << " of " << mlp.param_count());
    CHECK(grad[i] == Approx(numeric).margin(2e-3).epsilon(0.02));
  }
}

TEST_CASE("each gradient tensor is announced once, last layer first, bias before weights") {
  train::Mlp mlp({6, 5, 4, 3}, 7);
  const Batch b = make_batch({6, 5, 4, 3});
  std::vector<std::pair<int, bool>> order;
  mlp.train_batch(b.x.data(), b.y.data(), kBatch,
                  [&](int layer, bool bias) { order.emplace_back(layer, bias); });
  std::vector<std::pair<int, bool>> expected;
  for (int l = mlp.layers() - 1; l >= 0; --l) {
    expected.emplace_back(l, true);
    expected.emplace_back(l, false);
  }
  CHECK(order == expected);
}
