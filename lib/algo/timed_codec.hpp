// Timing the phases of a compressed call for the timeline: a codec adapter
// that forwards to another and reports each encode and decode to a sink.
#pragma once

#include <chrono>

#include "compressed.hpp"

namespace bagua {

// Receives the phases an algorithm can tell apart (encode, decode); the
// rest of its run is transfer. Called from the thread running the call.
class PhaseSink {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~PhaseSink() = default;
  virtual void phase(const char *name, Clock::time_point begin, Clock::time_point end) = 0;
};

class TimedCodec final : public ChunkCodec {
 public:
  TimedCodec(ChunkCodec &inner, PhaseSink &sink) : inner_(inner), sink_(sink) {}
  size_t encoded_bytes(size_t count) const override { return inner_.encoded_bytes(count); }
  size_t block_elems() const override { return inner_.block_elems(); }
  codec::CodecStatus encode(Stage stage, size_t position, const void *src, DType t, size_t count,
                            void *out) override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.encode(stage, position, src, t, count, out);
    sink_.phase("encode", begin, PhaseSink::Clock::now());
    return s;
  }
  // Queued encodes are timed when they are waited for.
  bool queues_encodes() const override { return inner_.queues_encodes(); }
  codec::CodecStatus begin_encode(Stage stage, size_t position, const void *src, DType t,
                                  size_t count, void *out) override {
    if (!inner_.queues_encodes()) return encode(stage, position, src, t, count, out);
    return inner_.begin_encode(stage, position, src, t, count, out);
  }
  codec::CodecStatus finish_encodes() override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.finish_encodes();
    sink_.phase("encode", begin, PhaseSink::Clock::now());
    return s;
  }
  codec::CodecStatus decode(const void *in, size_t bytes, size_t count, void *dst,
                            DType t) override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.decode(in, bytes, count, dst, t);
    sink_.phase("decode", begin, PhaseSink::Clock::now());
    return s;
  }
  codec::CodecStatus decode_accumulate(const void *in, size_t bytes, size_t count,
                                       float *acc) override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.decode_accumulate(in, bytes, count, acc);
    sink_.phase("decode", begin, PhaseSink::Clock::now());
    return s;
  }
  // Deferred verdicts are timed when they are waited for.
  codec::CodecStatus finish_decodes() override {
    const auto begin = PhaseSink::Clock::now();
    const codec::CodecStatus s = inner_.finish_decodes();
    sink_.phase("decode", begin, PhaseSink::Clock::now());
    return s;
  }
  // The reduce step runs where the inner codec keeps its accumulator.
  float *accumulator(size_t count) override { return inner_.accumulator(count); }
  codec::CodecStatus load_accumulator(const void *src, DType t, size_t count, float *acc) override {
    return inner_.load_accumulator(src, t, count, acc);
  }
  codec::CodecStatus divide_accumulator(float *acc, size_t count, float divisor) override {
    return inner_.divide_accumulator(acc, count, divisor);
  }
  codec::CodecStatus store_accumulator(const float *acc, size_t count, void *dst,
                                       DType t) override {
    return inner_.store_accumulator(acc, count, dst, t);
  }

 private:
  ChunkCodec &inner_;
  PhaseSink &sink_;
};

}  // namespace bagua
