#include "mlp.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace train {
namespace {

// Standard normal deviates from a fixed generator and a fixed transform (Box-Muller), so
// initial weights do not depend on the standard library's distribution implementation.
class Normal {
 public:
  explicit Normal(uint64_t seed) : gen_(seed) {}
  float next() {
    const double u1 = (gen_() + 1.0) / 18446744073709551616.0;  // (0, 1]
    const double u2 = gen_() / 18446744073709551616.0;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  std::mt19937_64 gen_;
};

}  // namespace

Mlp::Mlp(MlpShape shape, uint64_t seed) : shape_(shape) {
  std::vector<int> dims{shape.inputs};
  dims.insert(dims.end(), size_t(shape.hidden_layers), shape.hidden);
  dims.push_back(shape.classes);
  size_t offset = 0;
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    layers_.push_back({offset, offset + size_t(dims[i]) * dims[i + 1], dims[i], dims[i + 1]});
    offset = layers_.back().b + dims[i + 1];
  }
  act_.resize(layers_.size());
  delta_.resize(layers_.size());
  params_.assign(offset, 0.0f);
  grads_.assign(offset, 0.0f);

  // He initialisation of each weight matrix (biases stay 0).
  Normal normal(seed);
  for (const Layer &l : layers_) {
    const float stddev = std::sqrt(2.0f / l.in);
    for (size_t i = 0; i < size_t(l.in) * l.out; ++i) params_[l.w + i] = stddev * normal.next();
  }
}

void Mlp::dense(const Layer &l, const float *in, float *out, int batch, bool relu) {
  const float *bias = &params_[l.b];
  for (int r = 0; r < batch; ++r) std::copy(bias, bias + l.out, out + size_t(r) * l.out);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, l.out, l.in, 1.0f, in, l.in,
              &params_[l.w], l.out, 1.0f, out, l.out);
  if (relu)
    for (size_t i = 0; i < size_t(batch) * l.out; ++i) out[i] = std::max(out[i], 0.0f);
}

const float *Mlp::forward(const float *x, int batch) {
  const float *in = x;
  const size_t last = layers_.size() - 1;
  for (size_t i = 0; i <= last; ++i) {
    act_[i].resize(size_t(batch) * layers_[i].out);
    dense(layers_[i], in, act_[i].data(), batch, /*relu=*/i < last);
    in = act_[i].data();
  }
  return in;
}

// Given delta_out = dLoss/d(pre-activation output) of layer `index`: bias and weight gradients
// (each announced to `ready` once final), and (if delta_in) dLoss/d(input) masked by the
// input's ReLU.
void Mlp::backward_layer(int index, const float *in, float *delta_out, float *delta_in, int batch,
                         const GradientReadyFn &ready) {
  const Layer &l = layers_[index];
  float *db = &grads_[l.b];
  std::fill(db, db + l.out, 0.0f);
  for (int r = 0; r < batch; ++r)
    for (int j = 0; j < l.out; ++j) db[j] += delta_out[size_t(r) * l.out + j];
  if (ready) ready(index, /*bias=*/true);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, l.in, l.out, batch, 1.0f, in, l.in,
              delta_out, l.out, 0.0f, &grads_[l.w], l.out);
  if (ready) ready(index, /*bias=*/false);
  if (delta_in == nullptr) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, l.in, l.out, 1.0f, delta_out, l.out,
              &params_[l.w], l.out, 0.0f, delta_in, l.in);
  // ReLU derivative: the input activation is 0 where the unit was inactive.
  for (size_t i = 0; i < size_t(batch) * l.in; ++i)
    if (in[i] <= 0.0f) delta_in[i] = 0.0f;
}

float Mlp::train_batch(const float *x, const uint8_t *y, int batch, const GradientReadyFn &ready) {
  const float *logits = forward(x, batch);
  const int k = shape_.classes;
  const int last = layers() - 1;
  delta_[last].resize(size_t(batch) * k);

  // Softmax cross-entropy: loss = logsumexp - logit[label]; delta = (softmax - onehot) / batch.
  double loss = 0;
  for (int r = 0; r < batch; ++r) {
    const float *z = logits + size_t(r) * k;
    float *d = &delta_[last][size_t(r) * k];
    const float zmax = *std::max_element(z, z + k);
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(double(z[j] - zmax));
    loss += std::log(sum) + zmax - z[y[r]];
    for (int j = 0; j < k; ++j)
      d[j] = float((std::exp(double(z[j] - zmax)) / sum - (j == y[r] ? 1.0 : 0.0)) / batch);
  }

  // Backward from the logits to the input layer; delta_[i - 1] is layer i's input delta.
  for (int i = last; i >= 0; --i) {
    const float *in = i > 0 ? act_[i - 1].data() : x;
    float *delta_in = nullptr;
    if (i > 0) {
      delta_[i - 1].resize(size_t(batch) * layers_[i].in);
      delta_in = delta_[i - 1].data();
    }
    backward_layer(i, in, delta_[i].data(), delta_in, batch, ready);
  }
  return float(loss / batch);
}

int Mlp::count_correct(const float *x, const uint8_t *y, int rows) {
  const float *logits = forward(x, rows);
  const int k = shape_.classes;
  int correct = 0;
  for (int r = 0; r < rows; ++r) {
    const float *z = logits + size_t(r) * k;
    correct += (std::max_element(z, z + k) - z) == y[r];
  }
  return correct;
}

}  // namespace train
