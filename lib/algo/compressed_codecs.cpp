// The codec adapters of the compressed allreduce, and float32 conversions.
#include <cstdint>
#include <cstring>

#include "compressed.hpp"

namespace bagua {
namespace {

using codec::CodecStatus;

// The entry points of one min-max codec of kernels/codec.h (q8 or q4).
struct MinMaxEntryPoints {
  size_t (*encoded_bytes)(size_t count, uint32_t block);
  CodecStatus (*encode)(const void *src, DType t, size_t count, uint32_t block, void *out);
  CodecStatus (*decode)(const void *in, size_t bytes, size_t count, uint32_t block, void *dst,
                        DType t);
  CodecStatus (*decode_accumulate)(const void *in, size_t bytes, size_t count, uint32_t block,
                                   float *acc);
};

constexpr MinMaxEntryPoints kQ8{codec::q8_encoded_bytes, codec::q8_encode, codec::q8_decode,
                                codec::q8_decode_accumulate};
constexpr MinMaxEntryPoints kQ4{codec::q4_encoded_bytes, codec::q4_encode, codec::q4_decode,
                                codec::q4_decode_accumulate};

class MinMaxCodec final : public ChunkCodec {
 public:
  MinMaxCodec(const MinMaxEntryPoints &fns, uint32_t block) : fns_(fns), block_(block) {}
  size_t encoded_bytes(size_t count) const override { return fns_.encoded_bytes(count, block_); }
  size_t block_elems() const override { return block_; }
  CodecStatus encode(Stage, size_t, const void *src, DType t, size_t count, void *out) override {
    return fns_.encode(src, t, count, block_, out);
  }
  CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst, DType t) override {
    return fns_.decode(in, bytes, count, block_, dst, t);
  }
  CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count, float *acc) override {
    return fns_.decode_accumulate(in, bytes, count, block_, acc);
  }

 private:
  MinMaxEntryPoints fns_;
  uint32_t block_;
};

class CastCodec final : public ChunkCodec {
 public:
  CastCodec(codec::CastFormat format, float contribution_prescale, float reduced_prescale)
      : format_(format), prescale_{contribution_prescale, reduced_prescale} {}
  size_t encoded_bytes(size_t count) const override { return codec::cast_encoded_bytes(count); }
  size_t block_elems() const override { return 1; }
  CodecStatus encode(Stage stage, size_t, const void *src, DType t, size_t count,
                     void *out) override {
    return codec::cast_encode(src, t, count, format_, prescale_[static_cast<int>(stage)], out);
  }
  CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst, DType t) override {
    return codec::cast_decode(in, bytes, count, dst, t);
  }
  CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count, float *acc) override {
    return codec::cast_decode_accumulate(in, bytes, count, acc);
  }

 private:
  codec::CastFormat format_;
  float prescale_[2];
};

class SignCodec final : public ChunkCodec {
 public:
  SignCodec(uint32_t block, float *contribution_residual, float *reduced_residual)
      : block_(block), residual_{contribution_residual, reduced_residual} {}
  size_t encoded_bytes(size_t count) const override {
    return codec::sign_encoded_bytes(count, block_);
  }
  size_t block_elems() const override { return block_; }
  CodecStatus encode(Stage stage, size_t position, const void *src, DType t, size_t count,
                     void *out) override {
    // The sign encoder reads float32: half inputs go through a staging copy.
    const float *g = static_cast<const float *>(src);
    if (t != DType::f32) {
      staging_.resize(count);
      load_as_float(src, t, count, staging_.data());
      g = staging_.data();
    }
    return codec::sign_encode_with_feedback(g, residual_[static_cast<int>(stage)] + position, count,
                                            block_, out);
  }
  CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst, DType t) override {
    return codec::sign_decode(in, bytes, count, block_, dst, t);
  }
  CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count, float *acc) override {
    return codec::sign_decode_accumulate(in, bytes, count, block_, acc);
  }

 private:
  uint32_t block_;
  float *residual_[2];
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

std::unique_ptr<ChunkCodec> make_q8_codec(uint32_t block) {
  return std::make_unique<MinMaxCodec>(kQ8, block);
}

std::unique_ptr<ChunkCodec> make_q4_codec(uint32_t block) {
  return std::make_unique<MinMaxCodec>(kQ4, block);
}

std::unique_ptr<ChunkCodec> make_cast_codec(codec::CastFormat format, float contribution_prescale,
                                            float reduced_prescale) {
  return std::make_unique<CastCodec>(format, contribution_prescale, reduced_prescale);
}

std::unique_ptr<ChunkCodec> make_sign_codec(uint32_t block, float *contribution_residual,
                                            float *reduced_residual) {
  return std::make_unique<SignCodec>(block, contribution_residual, reduced_residual);
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
