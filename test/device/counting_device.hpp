// A Device that forwards every operation to another and counts its
// allocations (device and page-locked), so a test can show that a repeated
// call allocates nothing, on the emulated device and on CUDA alike; told
// to, it fails every copy, as a device that lost its context does.
#pragma once

#include <atomic>

#include "mc/device.hpp"

namespace bagua_test {

class CountingDevice final : public bagua::Device {
 public:
  explicit CountingDevice(bagua::Device &inner) : d_(inner) {}
  size_t allocations() const { return allocations_.load(); }
  void fail_copies(bool on) { fail_copies_ = on; }

  const char *name() const override { return d_.name(); }
  bool is_device_pointer(const void *p) const override { return d_.is_device_pointer(p); }
  void *allocate(size_t bytes) override {
    ++allocations_;
    return d_.allocate(bytes);
  }
  void release(void *p) override { d_.release(p); }
  void *allocate_host(size_t bytes) override {
    ++allocations_;
    return d_.allocate_host(bytes);
  }
  void release_host(void *p) override { d_.release_host(p); }
  bagua::Status copy(void *dst, const void *src, size_t bytes, void *stream) override {
    if (fail_copies_) return bagua::fail(BAGUA_ERR_INTERNAL, "the test device fails its copies");
    return d_.copy(dst, src, bytes, stream);
  }
  bagua::Status synchronize(void *stream) override { return d_.synchronize(stream); }
  bagua::Status create_stream(void **stream) override { return d_.create_stream(stream); }
  void destroy_stream(void *stream) override { d_.destroy_stream(stream); }
  bagua::Status create_event(void **event) override { return d_.create_event(event); }
  void destroy_event(void *event) override { d_.destroy_event(event); }
  bagua::Status record_event(void *event, void *stream) override {
    return d_.record_event(event, stream);
  }
  bagua::Status wait_event(void *event) override { return d_.wait_event(event); }

  bagua::codec::CodecStatus encode(const bagua::DeviceCodecSpec &spec, const void *src,
                                   bagua::DType t, size_t count, void *out, void *stream) override {
    return d_.encode(spec, src, t, count, out, stream);
  }
  bagua::codec::CodecStatus decode(const bagua::DeviceCodecSpec &spec, const void *in, size_t bytes,
                                   size_t count, void *dst, bagua::DType t, uint32_t *status,
                                   void *stream) override {
    return d_.decode(spec, in, bytes, count, dst, t, status, stream);
  }
  bagua::codec::CodecStatus decode_accumulate(const bagua::DeviceCodecSpec &spec, const void *in,
                                              size_t bytes, size_t count, float *acc,
                                              uint32_t *status, void *stream) override {
    return d_.decode_accumulate(spec, in, bytes, count, acc, status, stream);
  }
  bagua::codec::CodecStatus load_as_float(const void *src, bagua::DType t, size_t count, float *out,
                                          void *stream) override {
    return d_.load_as_float(src, t, count, out, stream);
  }
  bagua::codec::CodecStatus divide(float *acc, size_t count, float divisor, void *stream) override {
    return d_.divide(acc, count, divisor, stream);
  }
  bagua::codec::CodecStatus store_from_float(const float *acc, size_t count, void *dst,
                                             bagua::DType t, void *stream) override {
    return d_.store_from_float(acc, count, dst, t, stream);
  }

 private:
  bagua::Device &d_;
  std::atomic<size_t> allocations_{0};
  std::atomic<bool> fail_copies_{false};
};

}  // namespace bagua_test
