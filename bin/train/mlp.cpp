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
  const int dims[4] = {shape.inputs, shape.hidden, shape.hidden, shape.classes};
  size_t offset = 0;
  for (int i = 0; i < kLayers; ++i) {
    layers_[i] = {offset, offset + size_t(dims[i]) * dims[i + 1], dims[i], dims[i + 1]};
    offset = layers_[i].b + dims[i + 1];
  }
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
  for (int i = 0; i < 3; ++i) {
    act_[i].resize(size_t(batch) * layers_[i].out);
    dense(layers_[i], in, act_[i].data(), batch, /*relu=*/i < 2);
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
  delta_[2].resize(size_t(batch) * k);

  // Softmax cross-entropy: loss = logsumexp - logit[label]; delta = (softmax - onehot) / batch.
  double loss = 0;
  for (int r = 0; r < batch; ++r) {
    const float *z = logits + size_t(r) * k;
    float *d = &delta_[2][size_t(r) * k];
    const float zmax = *std::max_element(z, z + k);
    double sum = 0;
    for (int j = 0; j < k; ++j) sum += std::exp(double(z[j] - zmax));
    loss += std::log(sum) + zmax - z[y[r]];
    for (int j = 0; j < k; ++j)
      d[j] = float((std::exp(double(z[j] - zmax)) / sum - (j == y[r] ? 1.0 : 0.0)) / batch);
  }

  delta_[1].resize(size_t(batch) * layers_[2].in);
  delta_[0].resize(size_t(batch) * layers_[1].in);
  backward_layer(2, act_[1].data(), delta_[2].data(), delta_[1].data(), batch, ready);
  backward_layer(1, act_[0].data(), delta_[1].data(), delta_[0].data(), batch, ready);
  backward_layer(0, x, delta_[0].data(), nullptr, batch, ready);
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
