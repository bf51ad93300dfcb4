// The error each codec of the wire registry makes on real gradients: trains
// the trainer's MLP on Fashion-MNIST (one process, SGD, exact gradients) and
// every few steps encodes and decodes the step's flat gradient with each
// stateless codec at its default block, printing, per wire, the relative
// error ||decode(encode(g)) - g|| / ||g|| (mean and worst over the sampled
// steps), the largest element error as a fraction of max |g|, and the bits
// per element on the wire.
//   bagua-bench-gradient-error [--steps N] [--every K] [--data DIR]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "base/wires.hpp"
#include "core/options.hpp"
#include "idx.hpp"
#include "mlp.hpp"

namespace {

struct Args {
  int steps = 600;
  int every = 20;
  int batch = 64;
  std::string data = "/usr/share/datasets/fashion-mnist";
};

Args parse(int argc, char **argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--steps")
      a.steps = std::atoi(argv[i + 1]);
    else if (flag == "--every")
      a.every = std::atoi(argv[i + 1]);
    else if (flag == "--data")
      a.data = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--steps N] [--every K] [--data DIR]\n", argv[0]);
      std::exit(2);
    }
  }
  if (a.steps < 1 || a.every < 1) {
    std::fprintf(stderr, "--steps and --every must be positive\n");
    std::exit(2);
  }
  return a;
}

// One wire's error figures over the sampled steps.
struct Errors {
  const bagua::WireInfo *wire;
  uint32_t block;
  double sum_relative = 0, worst_relative = 0, worst_element = 0, bits = 0;
  int samples = 0;
};

void measure(Errors &e, const std::vector<float> &g) {
  const auto &k = *e.wire->host;
  std::vector<unsigned char> wire(k.encoded_bytes(g.size(), e.block));
  std::vector<float> back(g.size());
  const bagua::codec::CodecParams params{e.block, 1, nullptr};
  if (k.encode(params, g.data(), bagua::DType::f32, g.size(), wire.data()) !=
          bagua::codec::CodecStatus::ok ||
      k.decode(params, wire.data(), wire.size(), g.size(), back.data(), bagua::DType::f32) !=
          bagua::codec::CodecStatus::ok) {
    std::fprintf(stderr, "%s: the codec refused a gradient\n", e.wire->name);
    std::exit(1);
  }
  double err = 0, norm = 0, max_err = 0, max_g = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = double(back[i]) - g[i];
    err += d * d;
    norm += double(g[i]) * g[i];
    max_err = std::max(max_err, std::fabs(d));
    max_g = std::max(max_g, std::fabs(double(g[i])));
  }
  const double relative = std::sqrt(err / norm);
  e.sum_relative += relative;
  e.worst_relative = std::max(e.worst_relative, relative);
  e.worst_element = std::max(e.worst_element, max_err / max_g);
  e.bits = 8.0 * double(wire.size()) / double(g.size());
  ++e.samples;
}

}  // namespace

int main(int argc, char **argv) {
  const Args a = parse(argc, argv);
  const train::Dataset data = train::load_fashion_mnist(a.data, "train");
  train::Mlp mlp({}, 1);
  std::vector<Errors> errors;
  const bagua::CompressedOptions defaults;
  for (const bagua::WireInfo &w : bagua::wires())
    if (bagua::is_codec(w.id) && !w.error_feedback) errors.push_back({&w, defaults.block(w.id)});
  std::vector<int> order(size_t(data.labels.size()));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<float> x(size_t(a.batch) * data.cols);
  std::vector<uint8_t> y(size_t(a.batch));
  const float lr = 0.05f;
  for (int step = 0; step < a.steps; ++step) {
    const size_t first = size_t(step) * a.batch % (order.size() - a.batch);
    data.gather(std::span(order).subspan(first, a.batch), x.data(), y.data());
    mlp.train_batch(x.data(), y.data(), a.batch);
    const std::vector<float> g(mlp.grads().begin(), mlp.grads().end());
    if (step % a.every == 0)
      for (Errors &e : errors) measure(e, g);
    // Plain SGD on the exact gradient: the codecs see the gradients of one training run.
    for (size_t i = 0; i < g.size(); ++i) mlp.params()[i] -= lr * g[i];
  }
  std::printf("# %zu parameters, %d steps of batch %d, gradients sampled every %d steps\n",
              mlp.param_count(), a.steps, a.batch, a.every);
  std::printf("%-6s %6s %6s %12s %12s %16s\n", "wire", "block", "bits", "rel_err_mean",
              "rel_err_worst", "elem_err/max|g|");
  for (const Errors &e : errors)
    std::printf("%-6s %6u %6.2f %12.3e %12.3e %16.3e\n", e.wire->name, e.block, e.bits,
                e.sum_relative / e.samples, e.worst_relative, e.worst_element);
  return 0;
}
