// A 3-layer perceptron (in-H-H-classes, ReLU, softmax cross-entropy) on one flat parameter
// buffer, with OpenBLAS products. One instance per rank; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace train {

struct MlpShape {
  int inputs = 784;
  int hidden = 256;
  int classes = 10;
};

class Mlp {
 public:
  // He-initialised weights, zero biases; identical on every rank for the same seed.
  Mlp(MlpShape shape, uint64_t seed);

  // All parameters, contiguous: W1 (in x H), b1, W2 (H x H), b2, W3 (H x classes), b3.
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  // Gradient of the last train_batch, same layout as params().
  std::span<float> grads() { return grads_; }
  size_t param_count() const { return params_.size(); }

  // Forward and backward on `batch` rows of x (batch x inputs) with labels y: fills grads()
  // with the gradient of the mean loss and returns that mean loss.
  float train_batch(const float *x, const uint8_t *y, int batch);

  // Number of rows of x whose arg-max prediction equals the label (forward only).
  int count_correct(const float *x, const uint8_t *y, int rows);

 private:
  struct Layer {
    size_t w, b;  // offsets in params_ / grads_
    int in, out;
  };
  // Fills activations for `batch` rows; returns the logits buffer.
  const float *forward(const float *x, int batch);
  void dense(const Layer &l, const float *in, float *out, int batch, bool relu);
  void backward_layer(const Layer &l, const float *in, float *delta_out, float *delta_in,
                      int batch);

  MlpShape shape_;
  std::vector<float> params_, grads_;
  Layer layers_[3];
  // Activations after each layer (h1, h2, logits) and back-propagated deltas.
  std::vector<float> act_[3], delta_[3];
};

}  // namespace train
