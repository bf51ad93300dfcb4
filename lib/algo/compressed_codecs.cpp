// The host codec adapter of the compressed allreduce, and float32 conversions.
#include <cstdint>
#include <cstring>

#include "compressed.hpp"

namespace bagua {
namespace {

using codec::CodecStatus;

// Any wire of the registry, through its host kernels.
class HostCodec final : public ChunkCodec {
 public:
  HostCodec(const WireInfo &wire, const CodecSetup &setup)
      : wire_(wire), kernels_(*wire.host), setup_(setup) {}
  size_t encoded_bytes(size_t count) const override {
    return kernels_.encoded_bytes(count, setup_.block);
  }
  size_t block_elems() const override { return setup_.block; }
  CodecStatus encode(Stage stage, size_t position, const void *src, DType t, size_t count,
                     void *out) override {
    // Encoders that read float32 only get half inputs through a staging copy.
    if (wire_.encodes_float32 && t != DType::f32) {
      staging_.resize(count);
      load_as_float(src, t, count, staging_.data());
      src = staging_.data();
      t = DType::f32;
    }
    return kernels_.encode(params(stage, position), src, t, count, out);
  }
  CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst, DType t) override {
    return kernels_.decode(params(Stage::contribution, 0), in, bytes, count, dst, t);
  }
  CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count, float *acc) override {
    return kernels_.decode_accumulate(params(Stage::contribution, 0), in, bytes, count, acc);
  }

 private:
  codec::CodecParams params(Stage stage, size_t position) const {
    const int i = static_cast<int>(stage);
    float *residual = setup_.residual[i] == nullptr ? nullptr : setup_.residual[i] + position;
    return {setup_.block, setup_.prescale[i], residual};
  }

  const WireInfo &wire_;
  const codec::HostCodecKernels &kernels_;
  CodecSetup setup_;
  std::vector<float> staging_;
};

}  // namespace

float *ChunkCodec::accumulator(size_t count) {
  if (host_accumulator_.size() < count) host_accumulator_.resize(count);
  return host_accumulator_.data();
}

CodecStatus ChunkCodec::load_accumulator(const void *src, DType t, size_t count, float *acc) {
  load_as_float(src, t, count, acc);
  return CodecStatus::ok;
}

CodecStatus ChunkCodec::divide_accumulator(float *acc, size_t count, float divisor) {
  for (size_t i = 0; i < count; ++i) acc[i] /= divisor;
  return CodecStatus::ok;
}

CodecStatus ChunkCodec::store_accumulator(const float *acc, size_t count, void *dst, DType t) {
  store_from_float(acc, count, dst, t);
  return CodecStatus::ok;
}

std::unique_ptr<ChunkCodec> make_host_codec(const WireInfo &wire, const CodecSetup &setup) {
  if (wire.host == nullptr) return nullptr;
  return std::make_unique<HostCodec>(wire, setup);
}

// Conversions between element buffers and float32.
void load_as_float(const void *src, DType t, size_t count, float *out) {
  elem::visit(t, [&]<class E>(E) {
    for (size_t i = 0; i < count; ++i) out[i] = float(elem::load_at<E>(src, i));
  });
}

void add_as_float(const void *src, DType t, size_t count, float *acc) {
  elem::visit(t, [&]<class E>(E) {
    for (size_t i = 0; i < count; ++i) acc[i] += float(elem::load_at<E>(src, i));
  });
}

void store_from_float(const float *in, size_t count, void *dst, DType t) {
  elem::visit(t, [&]<class E>(E) {
    for (size_t i = 0; i < count; ++i) elem::store_at<E>(dst, i, in[i]);
  });
}

}  // namespace bagua
