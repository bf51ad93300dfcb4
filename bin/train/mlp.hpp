// A multi-layer perceptron (in-H-...-H-classes: hidden_layers layers of H units, ReLU, softmax
// cross-entropy) on one flat parameter buffer, with OpenBLAS products. One instance per rank; not
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace train {

struct MlpShape {
  int inputs = 784;
  int hidden = 256;
  int classes = 10;
  int hidden_layers = 2;  // >= 1
};

// Called during backward as soon as one parameter tensor's gradient is final: (layer, is_bias).
using GradientReadyFn = std::function<void(int layer, bool bias)>;

class Mlp {
 public:
  // He-initialised weights, zero biases; identical on every rank for the same seed.
  Mlp(MlpShape shape, uint64_t seed);

  // Dense layers: hidden_layers + 1 (the last one produces the logits).
  int layers() const { return int(layers_.size()); }
  // All parameters, contiguous: W1 (in x H), b1, W2 (H x H), b2, ..., the last (H x classes), its
  // bias.
  std::span<float> params() { return params_; }
  std::span<const float> params() const { return params_; }
  // Gradient of the last train_batch, same layout as params().
  std::span<float> grads() { return grads_; }
  size_t param_count() const { return params_.size(); }
  // Layer l's weight and bias gradients inside grads() (l = 0 is the input layer).
  std::span<float> weight_grads(int l) {
    return std::span(grads_).subspan(layers_[l].w, size_t(layers_[l].in) * layers_[l].out);
  }
  std::span<float> bias_grads(int l) {
    return std::span(grads_).subspan(layers_[l].b, layers_[l].out);
  }

  // Forward and backward on `batch` rows of x (batch x inputs) with labels y: fills grads()
  // with the gradient of the mean loss and returns that mean loss. Backward runs from the last
  // layer to the first; within a layer the bias gradient is computed before the weight
  // gradient, and `ready` (if set) is called for each as soon as it is final.
  float train_batch(const float *x, const uint8_t *y, int batch,
                    const GradientReadyFn &ready = nullptr);

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
  void backward_layer(int index, const float *in, float *delta_out, float *delta_in, int batch,
                      const GradientReadyFn &ready);

  MlpShape shape_;
  std::vector<float> params_, grads_;
  std::vector<Layer> layers_;
  // Activations after each layer (the hidden ones, then the logits) and back-propagated deltas.
  std::vector<std::vector<float>> act_, delta_;
};

}  // namespace train
