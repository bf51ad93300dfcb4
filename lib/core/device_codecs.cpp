// The device adapters of the compressed allreduce (see device_codecs.hpp).
#include "device_codecs.hpp"

#include <cstring>
#include <vector>

namespace bagua {
namespace {

using codec::CodecStatus;

CodecStatus as_codec_status(Status s) {
  return s == BAGUA_SUCCESS ? CodecStatus::ok : CodecStatus::device_error;
}

class DeviceCodec final : public ChunkCodec {
 public:
  DeviceCodec(const WireInfo &wire, const CodecSetup &setup, DeviceScratch &scratch, void *stream)
      : wire_(wire),
        setup_(setup),
        spec_{wire.id, {setup.block, 1, nullptr}},
        scratch_(scratch),
        device_(scratch.device()),
        stream_(stream) {}

  size_t encoded_bytes(size_t count) const override {
    return device_codec_encoded_bytes(spec_, count);
  }
  size_t block_elems() const override { return setup_.block; }

  // Only the encoded bytes cross to the host; the transport needs them now.
  // They have their own place (ScratchUse::encoded), apart from the queue:
  // how many pieces are queued when a reduced segment is encoded depends on
  // arrivals, and must not change how large the scratch grows.
  CodecStatus encode(Stage stage, size_t position, const void *src, DType t, size_t count,
                     void *out) override {
    const size_t n = encoded_bytes(count);
    void *dev = scratch_.on_device(ScratchUse::encoded, n);
    void *host = scratch_.on_host(ScratchUse::encoded, n);
    if (dev == nullptr || host == nullptr) return CodecStatus::device_error;
    const CodecStatus st = encode_to_host(stage, position, src, t, count, dev, host);
    if (st != CodecStatus::ok) return st;
    if (device_.synchronize(stream_) != BAGUA_SUCCESS) return CodecStatus::device_error;
    std::memcpy(out, host, n);
    return CodecStatus::ok;
  }

  // Each queued piece gets its own place in the queued scratch (device and
  // page-locked); finish_encodes copies them out after one synchronisation.
  bool queues_encodes() const override { return true; }
  CodecStatus begin_encode(Stage stage, size_t position, const void *src, DType t, size_t count,
                           void *out) override {
    const size_t n = encoded_bytes(count), at = queued_bytes_;
    // 16-byte places: the kernels' encoded buffers must be aligned.
    queued_bytes_ += (n + 15) / 16 * 16;
    auto *dev = static_cast<unsigned char *>(scratch_.on_device(ScratchUse::queued, queued_bytes_));
    auto *host = static_cast<unsigned char *>(scratch_.on_host(ScratchUse::queued, queued_bytes_));
    if (dev == nullptr || host == nullptr) return CodecStatus::device_error;
    const CodecStatus st = encode_to_host(stage, position, src, t, count, dev + at, host + at);
    if (st != CodecStatus::ok) return st;
    queued_.push_back({host + at, out, n});
    return CodecStatus::ok;
  }
  CodecStatus finish_encodes() override {
    const Status s = device_.synchronize(stream_);
    for (const Queued &q : queued_) std::memcpy(q.out, q.host, q.bytes);
    queued_.clear();
    queued_bytes_ = 0;
    return as_codec_status(s);
  }

  // Decodes are enqueued with a verdict slot each; finish_decodes copies
  // the slots to the host after one synchronisation.
  CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst, DType t) override {
    return decode_staged(in, bytes, [&](const void *dev, uint32_t *status) {
      return device_.decode(spec_, dev, bytes, count, dst, t, status, stream_);
    });
  }

  CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count, float *acc) override {
    return decode_staged(in, bytes, [&](const void *dev, uint32_t *status) {
      return device_.decode_accumulate(spec_, dev, bytes, count, acc, status, stream_);
    });
  }

  CodecStatus finish_decodes() override {
    if (pending_verdicts_ == 0) return CodecStatus::ok;
    const size_t n = pending_verdicts_;
    pending_verdicts_ = 0;
    auto *dev = static_cast<uint32_t *>(scratch_.on_device(ScratchUse::verdict, kVerdictBytes));
    auto *host = static_cast<uint32_t *>(scratch_.on_host(ScratchUse::verdict, kVerdictBytes));
    if (dev == nullptr || host == nullptr ||
        device_.copy(host, dev, n * sizeof(uint32_t), stream_) != BAGUA_SUCCESS ||
        device_.synchronize(stream_) != BAGUA_SUCCESS)
      return CodecStatus::device_error;
    for (size_t i = 0; i < n; ++i)
      if (host[i] != 0) return static_cast<CodecStatus>(host[i]);
    return CodecStatus::ok;
  }

  float *accumulator(size_t count) override {
    return static_cast<float *>(scratch_.on_device(ScratchUse::accumulator, count * sizeof(float)));
  }
  CodecStatus load_accumulator(const void *src, DType t, size_t count, float *acc) override {
    return device_.load_as_float(src, t, count, acc, stream_);
  }
  CodecStatus divide_accumulator(float *acc, size_t count, float divisor) override {
    return device_.divide(acc, count, divisor, stream_);
  }
  CodecStatus store_accumulator(const float *acc, size_t count, void *dst, DType t) override {
    const CodecStatus st = device_.store_from_float(acc, count, dst, t, stream_);
    if (st != CodecStatus::ok) return st;
    return as_codec_status(device_.synchronize(stream_));
  }

 private:
  // A queued piece: its page-locked bytes and where they go.
  struct Queued {
    const void *host;
    void *out;
    size_t bytes;
  };

  // The kernel of one encode, with the stage's prescale and residual (from
  // `position` on). Encoders that read float32 only get half inputs
  // converted into device scratch first, as the host codec does.
  CodecStatus encode_on_device(Stage stage, size_t position, const void *src, DType t, size_t count,
                               void *out) {
    const int i = static_cast<int>(stage);
    DeviceCodecSpec spec = spec_;
    spec.params.prescale = setup_.prescale[i];
    if (setup_.residual[i] != nullptr) spec.params.residual = setup_.residual[i] + position;
    if (wire_.encodes_float32 && t != DType::f32) {
      auto *g =
          static_cast<float *>(scratch_.on_device(ScratchUse::converted, count * sizeof(float)));
      if (g == nullptr) return CodecStatus::device_error;
      const CodecStatus st = device_.load_as_float(src, t, count, g, stream_);
      if (st != CodecStatus::ok) return st;
      src = g;
      t = DType::f32;
    }
    return device_.encode(spec, src, t, count, out, stream_);
  }

  // Encodes into `dev` and enqueues the copy of its encoded bytes to the
  // page-locked `host`, both on the stream (the caller synchronises).
  CodecStatus encode_to_host(Stage stage, size_t position, const void *src, DType t, size_t count,
                             void *dev, void *host) {
    const CodecStatus st = encode_on_device(stage, position, src, t, count, dev);
    if (st != CodecStatus::ok) return st;
    return as_codec_status(device_.copy(host, dev, encoded_bytes(count), stream_));
  }

  // Copies the encoded bytes to the device and enqueues `kernel` on them,
  // its verdict on the (untrusted) headers going to the next slot; a full
  // set of slots is waited for at once. Later copies into `dev` queue behind
  // the kernel on the stream, and outgrown scratch is kept until the codec's
  // scratch is released, so nothing a pending kernel reads is overwritten.
  template <class Kernel>
  CodecStatus decode_staged(const void *in, size_t bytes, Kernel &&kernel) {
    void *dev = scratch_.on_device(ScratchUse::encoded, bytes);
    auto *status = static_cast<uint32_t *>(scratch_.on_device(ScratchUse::verdict, kVerdictBytes));
    if (dev == nullptr || status == nullptr) return CodecStatus::device_error;
    // From pageable memory the copy returns once `in` is staged, so the
    // schedule may reuse its slot at once.
    if (device_.copy(dev, in, bytes, stream_) != BAGUA_SUCCESS) return CodecStatus::device_error;
    const CodecStatus st = kernel(dev, status + pending_verdicts_);
    if (st != CodecStatus::ok) return st;
    if (++pending_verdicts_ < kVerdictSlots) return CodecStatus::ok;
    return finish_decodes();
  }

  const WireInfo &wire_;
  CodecSetup setup_;
  DeviceCodecSpec spec_;  // wire and block; the rest is set per encode
  DeviceScratch &scratch_;
  Device &device_;
  void *stream_;
  std::vector<Queued> queued_;
  size_t queued_bytes_ = 0;
  // Verdict slots of decodes not yet waited for (finish_decodes).
  static constexpr size_t kVerdictSlots = 64;
  static constexpr size_t kVerdictBytes = kVerdictSlots * sizeof(uint32_t);
  size_t pending_verdicts_ = 0;
};

}  // namespace

size_t device_codec_encoded_bytes(const DeviceCodecSpec &spec, size_t count) {
  const codec::HostCodecKernels *host = wire_info(spec.wire).host;
  return host == nullptr ? 0 : host->encoded_bytes(count, spec.params.block);
}

std::unique_ptr<ChunkCodec> make_device_codec(const WireInfo &wire, const CodecSetup &setup,
                                              DeviceScratch &scratch, void *stream) {
  if (!is_codec(wire.id)) return nullptr;
  return std::make_unique<DeviceCodec>(wire, setup, scratch, stream);
}

}  // namespace bagua
