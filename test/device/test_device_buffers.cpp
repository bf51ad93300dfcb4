// Device buffers in every collective that takes them: each call's result on
// device buffers must be bit for bit its result on host buffers of the same
// inputs (exact, q8, q4, fp16, bf16, sign, decentralized, low-precision
// decentralized, partial reduce, hierarchical mode, buckets, nonblocking
// calls; in place and not; a misaligned device buffer), asynchronous
// averaging of a device buffer reaches the exact mean, a repeated call (or
// round) allocates no device or page-locked memory, and the calls that cannot
// take device memory as given refuse it with a message.
//
// Two builds of this file: on the emulated device (test/device/, every CI
// pass; its device memory faults when the host touches it, so any host
// access of a device buffer crashes the test) and, with
// BAGUA_TEST_ON_CUDA, on the CUDA device (exits 77, SKIP, without a GPU),
// where the calls also run once on a stream of the caller's.
// Plain main: the skip must happen before any check runs.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bagua.h"
#include "counting_device.hpp"
#include "half.h"
#include "mc/device.hpp"
#ifdef BAGUA_TEST_ON_CUDA
#include <cuda_runtime_api.h>

#include "mc/cuda_device.hpp"
#else
#include "emulated_device.hpp"
#endif

namespace {

int failures = 0;
int rank = 0, size = 1;
bagua_test::CountingDevice *device = nullptr;
void *test_stream = nullptr;  // the test's own copies (DeviceBuffer)

void expect(bool ok, const std::string &what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d FAILED: %s\n", rank, what.c_str());
}

// rc must be BAGUA_SUCCESS; the message is read after the call returned.
void expect_ok(int rc, const std::string &what) {
  if (rc != BAGUA_SUCCESS) expect(false, what + ": " + bagua_last_error());
}

void expect_refused(int rc, const char *what, const char *needle) {
  expect(rc == BAGUA_ERR_INVALID_ARGUMENT, std::string(what) + " is refused");
  expect(std::strstr(bagua_last_error(), needle) != nullptr,
         std::string(what) + ": message '" + bagua_last_error() + "'");
}

size_t elem_size(MPI_Datatype t) { return t == MPI_DOUBLE ? 8 : t == MPI_FLOAT ? 4 : 2; }

const char *type_name(MPI_Datatype t) {
  return t == MPI_DOUBLE ? "f64" : t == MPI_FLOAT ? "f32" : t == BAGUA_FLOAT16 ? "f16" : "bf16";
}

// v as raw bytes of type t at out.
void store_value(MPI_Datatype t, float v, unsigned char *out) {
  if (t == MPI_DOUBLE) {
    const double d = v;
    std::memcpy(out, &d, 8);
  } else if (t == MPI_FLOAT) {
    std::memcpy(out, &v, 4);
  } else {
    const uint16_t h = t == BAGUA_FLOAT16 ? bagua::float_to_fp16(v) : bagua::float_to_bf16(v);
    std::memcpy(out, &h, 2);
  }
}

// Closed-form input of this rank, element i, as raw bytes of type t.
std::vector<unsigned char> input(MPI_Datatype t, int count, int salt = 0) {
  std::vector<unsigned char> bytes(size_t(count) * elem_size(t));
  for (int i = 0; i < count; ++i)
    store_value(t, float((i * 7 + rank * 13 + salt * 5) % 97) * 0.25f - 12.0f,
                &bytes[size_t(i) * elem_size(t)]);
  return bytes;
}

// Device memory holding `bytes` (plus `offset` bytes before it, for
// misaligned buffers), freed at scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, size_t offset = 0)
      : base_(static_cast<unsigned char *>(device->allocate(bytes + offset + 1))),
        p_(base_ + offset),
        bytes_(bytes) {
    if (base_ == nullptr) throw std::bad_alloc();
  }
  ~DeviceBuffer() { device->release(base_); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *get() const { return p_; }
  // On the test's own stream: a call must have finished its work on the
  // buffer when it returns (or its request completed), not merely queued
  // it on the stream the library used.
  void fill(const std::vector<unsigned char> &bytes) {
    device->copy(p_, bytes.data(), bytes.size(), test_stream);
    device->synchronize(test_stream);
  }
  std::vector<unsigned char> read() const {
    std::vector<unsigned char> out(bytes_);
    device->copy(out.data(), p_, bytes_, test_stream);
    device->synchronize(test_stream);
    return out;
  }

 private:
  unsigned char *base_;
  unsigned char *p_;
  size_t bytes_;
};

// A collective on (sendbuf or MPI_IN_PLACE, recvbuf).
using Collective = std::function<int(const void *, void *)>;

// Runs `call` on host buffers and on device buffers of the same input and
// compares the results; `offset` misaligns the device buffers.
void compare(const std::string &name, const Collective &call, MPI_Datatype t, int count,
             bool in_place, size_t offset = 0) {
  const std::string what = name + " " + type_name(t) + " count " + std::to_string(count) +
                           (in_place ? " in place" : "") + (offset ? " misaligned" : "");
  const std::vector<unsigned char> in = input(t, count);
  std::vector<unsigned char> host_out(in.size(), 0);
  if (in_place) host_out = in;
  expect_ok(call(in_place ? MPI_IN_PLACE : in.data(), host_out.data()), what + " on the host");
  DeviceBuffer d_in(in.size(), offset), d_out(in.size(), offset);
  (in_place ? d_out : d_in).fill(in);
  expect_ok(call(in_place ? MPI_IN_PLACE : d_in.get(), d_out.get()), what + " on the device");
  expect(d_out.read() == host_out, what + ": device result differs from the host's");
}

using Allreduce = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

Collective allreduce(Allreduce f, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  return [=](const void *s, void *r) { return f(s, r, count, t, op, comm); };
}

void exact_and_codecs(MPI_Comm comm) {
  for (int count : {1, 1000, 70001})
    for (MPI_Datatype t : {MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16})
      for (MPI_Op op : {MPI_SUM, MPI_MAX, BAGUA_AVG})
        for (bool in_place : {false, true})
          compare("exact", allreduce(bagua_allreduce, count, t, op, comm), t, count, in_place);
  const struct {
    const char *name;
    Allreduce f;
  } codecs[] = {{"q8", bagua_allreduce_q8},
                {"q4", bagua_allreduce_q4},
                {"fp16", bagua_allreduce_fp16},
                {"bf16", bagua_allreduce_bf16}};
  for (const auto &c : codecs)
    for (int count : {7, 4097, 300001})
      for (MPI_Datatype t : {MPI_FLOAT, BAGUA_FLOAT16, BAGUA_BFLOAT16})
        for (MPI_Op op : {MPI_SUM, BAGUA_AVG})
          for (bool in_place : {false, true})
            compare(c.name, allreduce(c.f, count, t, op, comm), t, count, in_place);
  // Misaligned device buffers go through the page-locked staging.
  compare("q8", allreduce(bagua_allreduce_q8, 4097, MPI_FLOAT, MPI_SUM, comm), MPI_FLOAT, 4097,
          false, 2);
  compare("exact", allreduce(bagua_allreduce, 4097, MPI_FLOAT, MPI_SUM, comm), MPI_FLOAT, 4097,
          true, 2);
}

// Sign keeps error feedback between calls: two states, one per memory type,
// must give the same results call after call (float32, and bfloat16 whose
// encoder input is converted on the device). A state serves one memory type.
void sign(MPI_Comm comm, MPI_Datatype t) {
  const int count = 5000;
  bagua_sign_state_t host_state = nullptr, device_state = nullptr;
  expect_ok(bagua_sign_state_create(count, comm, &host_state), "sign state");
  expect_ok(bagua_sign_state_create(count, comm, &device_state), "sign state");
  for (int round = 0; round < 3; ++round) {
    const std::vector<unsigned char> in = input(t, count, round);
    std::vector<unsigned char> host_out(in.size());
    expect_ok(
        bagua_allreduce_sign(in.data(), host_out.data(), count, t, BAGUA_AVG, comm, host_state),
        "sign on the host");
    DeviceBuffer d_in(in.size()), d_out(in.size());
    d_in.fill(in);
    expect_ok(
        bagua_allreduce_sign(d_in.get(), d_out.get(), count, t, BAGUA_AVG, comm, device_state),
        "sign on the device");
    expect(d_out.read() == host_out,
           std::string("sign ") + type_name(t) + " round " + std::to_string(round) + " differs");
  }
  DeviceBuffer d(size_t(count) * elem_size(t));
  expect_refused(bagua_allreduce_sign(MPI_IN_PLACE, d.get(), count, t, BAGUA_AVG, comm, host_state),
                 "a host sign state with device buffers", "one state per memory type");
  bagua_sign_state_destroy(&host_state);
  bagua_sign_state_destroy(&device_state);
}

void decentralized(MPI_Comm comm) {
  for (bagua_peer_mode mode : {BAGUA_PEER_SHIFT_ONE, BAGUA_PEER_RING, BAGUA_PEER_ALL})
    for (int step : {0, 1})
      for (int interval : {1, 2})
        for (bool in_place : {false, true})
          compare(
              "decentralized mode " + std::to_string(int(mode)) + " step " + std::to_string(step) +
                  " interval " + std::to_string(interval),
              [=](const void *s, void *r) {
                return bagua_decentralized_average(s, r, 3001, MPI_FLOAT, mode, step, interval,
                                                   comm);
              },
              MPI_FLOAT, 3001, in_place);
}

// Low precision: one state on a host buffer, one on a device buffer; the
// buffers and the replicas must agree after every step.
void lowprec(MPI_Comm comm) {
  const int count = 6000;
  std::vector<unsigned char> host = input(MPI_FLOAT, count);
  DeviceBuffer dev(host.size());
  dev.fill(host);
  bagua_lowprec_t host_state = nullptr, device_state = nullptr;
  expect_ok(bagua_lowprec_create(host.data(), count, MPI_FLOAT, 1, comm, &host_state),
            "lowprec on the host");
  expect_ok(bagua_lowprec_create(dev.get(), count, MPI_FLOAT, 1, comm, &device_state),
            "lowprec on the device");
  if (host_state == nullptr || device_state == nullptr) return;
  for (int step = 0; step < 3; ++step) {
    // The caller's optimizer step: the same change on both buffers.
    std::vector<unsigned char> moved = input(MPI_FLOAT, count, step + 1);
    host = moved;
    dev.fill(moved);
    expect(bagua_lowprec_step(host_state, host.data()) == BAGUA_SUCCESS, "lowprec host step");
    expect_ok(bagua_lowprec_step(device_state, dev.get()), "lowprec device step");
    expect(dev.read() == host, "lowprec step " + std::to_string(step) + " differs");
    const float *a = nullptr, *b = nullptr;
    bagua_lowprec_replicas(host_state, &a, nullptr, nullptr);
    bagua_lowprec_replicas(device_state, &b, nullptr, nullptr);
    expect(std::memcmp(a, b, count * sizeof(float)) == 0, "lowprec replicas differ");
  }
  bagua_lowprec_destroy(&host_state);
  bagua_lowprec_destroy(&device_state);
}

// Every rank in the group (group_size = size) and a deadline no loaded
// machine reaches (a group the deadline closed early would leave ranks out),
// so the groups are known.
void partial() {
  setenv("BAGUA_PARTIAL_DEADLINE_MS", "600000", 1);
  setenv("BAGUA_PARTIAL_DEADLINE_MAX_MS", "600000", 1);
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  for (bool in_place : {false, true})
    compare(
        "partial",
        [=](const void *s, void *r) {
          return bagua_partial_reduce(s, r, 2049, MPI_FLOAT, size, comm, nullptr);
        },
        MPI_FLOAT, 2049, in_place);
  unsetenv("BAGUA_PARTIAL_DEADLINE_MS");
  unsetenv("BAGUA_PARTIAL_DEADLINE_MAX_MS");
  bagua_partial_leave(comm);
  MPI_Comm_free(&comm);
}

// BAGUA_HIERARCHICAL=1 (read when a communicator is first used): no device
// schedule, so the call is staged.
void hierarchical() {
  setenv("BAGUA_HIERARCHICAL", "1", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  compare("hierarchical q8", allreduce(bagua_allreduce_q8, 9000, MPI_FLOAT, MPI_SUM, comm),
          MPI_FLOAT, 9000, false);
  MPI_Comm_free(&comm);
  unsetenv("BAGUA_HIERARCHICAL");
}

// The tensors of a bucketed communicator after `rounds` steps (every tensor
// marked ready in registration order, then wait_all), on the host or on
// the device; small caps give several buckets, one of a single tensor.
std::vector<std::vector<unsigned char>> bucket_steps(MPI_Comm comm, bool on_device,
                                                     bagua_algorithm algorithm) {
  const int counts[] = {1000, 3000, 20000, 0, 513};
  const int rounds = 2;
  bagua_bucket_config config;
  bagua_bucket_config_init(&config);
  config.bucket_bytes = 16384;
  config.algorithm.algorithm = algorithm;
  bagua_bucket_comm_t bc = nullptr;
  expect(bagua_bucket_comm_create(comm, &config, &bc) == BAGUA_SUCCESS, "bucket comm");
  std::vector<std::vector<unsigned char>> host;
  std::vector<std::unique_ptr<DeviceBuffer>> dev;
  for (int i = 0; i < 5; ++i) {
    host.push_back(input(MPI_FLOAT, counts[i], i));
    dev.push_back(std::make_unique<DeviceBuffer>(host.back().size()));
    dev.back()->fill(host.back());
    void *ptr = on_device ? dev.back()->get() : host.back().data();
    int id = -1;
    expect_ok(bagua_bucket_comm_register(bc, ptr, counts[i], MPI_FLOAT, &id), "register");
  }
  int buckets = 0;
  expect_ok(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets), "finalize");
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 5; ++i) expect_ok(bagua_bucket_comm_mark_ready(bc, i), "mark ready");
    expect_ok(bagua_bucket_comm_wait_all(bc), "wait_all");
  }
  // Read before destroying bc: wait_all's buckets must hold the results.
  if (on_device)
    for (int i = 0; i < 5; ++i) host[size_t(i)] = dev[size_t(i)]->read();
  bagua_bucket_comm_destroy(&bc);
  return host;
}

void buckets(MPI_Comm comm) {
  for (bagua_algorithm a : {BAGUA_ALGORITHM_EXACT, BAGUA_ALGORITHM_Q8})
    expect(bucket_steps(comm, true, a) == bucket_steps(comm, false, a),
           "device tensors in buckets differ from host tensors (algorithm " +
               std::to_string(int(a)) + ")");
}

// Nonblocking calls on device buffers: several in flight at once, each
// waited for; the results equal the host calls'.
void nonblocking(MPI_Comm comm) {
  using Start = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
  const struct {
    const char *name;
    Start start;
    int count;
  } calls[] = {{"iallreduce", bagua_iallreduce, 70001},
               {"iallreduce_q8", bagua_iallreduce_q8, 300001},
               {"iallreduce_q4", bagua_iallreduce_q4, 4097}};
  for (bool in_place : {false, true}) {
    std::vector<std::vector<unsigned char>> host_out;
    std::vector<std::unique_ptr<DeviceBuffer>> d_in, d_out;
    std::vector<MPI_Request> requests;
    for (const auto &c : calls) {
      const std::vector<unsigned char> in = input(MPI_FLOAT, c.count);
      host_out.push_back(in);
      MPI_Request r = MPI_REQUEST_NULL;
      expect_ok(c.start(in_place ? MPI_IN_PLACE : in.data(), host_out.back().data(), c.count,
                        MPI_FLOAT, MPI_SUM, comm, &r),
                std::string(c.name) + " on the host");
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      d_in.push_back(std::make_unique<DeviceBuffer>(in.size()));
      d_out.push_back(std::make_unique<DeviceBuffer>(in.size()));
      (in_place ? *d_out.back() : *d_in.back()).fill(in);
    }
    // All device calls in flight together.
    for (size_t i = 0; i < 3; ++i) {
      MPI_Request r = MPI_REQUEST_NULL;
      expect_ok(calls[i].start(in_place ? MPI_IN_PLACE : d_in[i]->get(), d_out[i]->get(),
                               calls[i].count, MPI_FLOAT, MPI_SUM, comm, &r),
                std::string(calls[i].name) + " on the device");
      requests.push_back(r);
    }
    MPI_Waitall(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    for (size_t i = 0; i < 3; ++i)
      expect(d_out[i]->read() == host_out[i], std::string(calls[i].name) +
                                                  (in_place ? " in place" : "") +
                                                  ": device result differs from the host's");
  }
}

// A call repeated with the same sizes allocates nothing on the device or in
// page-locked memory (the communicator's scratch is warm).
void no_allocation_when_repeated(MPI_Comm comm) {
  const int count = 300001;
  const std::vector<unsigned char> in = input(MPI_FLOAT, count);
  DeviceBuffer d_in(in.size()), d_out(in.size());
  d_in.fill(in);
  auto calls = [&] {
    bagua_allreduce_q8(d_in.get(), d_out.get(), count, MPI_FLOAT, MPI_SUM, comm);
    bagua_allreduce_fp16(d_in.get(), d_out.get(), count, MPI_FLOAT, BAGUA_AVG, comm);
    bagua_allreduce(d_in.get(), d_out.get(), count, MPI_FLOAT, MPI_SUM, comm);
    bagua_decentralized_average(d_in.get(), d_out.get(), count, MPI_FLOAT, BAGUA_PEER_RING, 0, 1,
                                comm);
    MPI_Request r = MPI_REQUEST_NULL;
    bagua_iallreduce_q8(d_in.get(), d_out.get(), count, MPI_FLOAT, MPI_SUM, comm, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  };
  calls();
  const size_t before = device->allocations();
  calls();
  calls();
  const size_t allocated = device->allocations() - before;
  expect(allocated == 0,
         "repeated device calls allocated " + std::to_string(allocated) + " buffers");
}

// Weights spread around a mean that every type holds exactly: element i is
// centre(i) + rank - (size - 1) / 2 on each rank, or centre(i) itself (the
// mean). Sums and differences of these quarters are exact, so an averaging
// round leaves every rank with the mean, and any later round keeps it.
std::vector<unsigned char> spread_weights(MPI_Datatype t, int count, int salt, bool mean) {
  std::vector<unsigned char> bytes(size_t(count) * elem_size(t));
  const float offset = mean ? 0.0f : float(rank) - float(size - 1) / 2;
  for (int i = 0; i < count; ++i)
    store_value(t, float((i * 7 + salt * 5) % 97) * 0.25f - 12.0f + offset,
                &bytes[size_t(i) * elem_size(t)]);
  return bytes;
}

// Polls (under the averager's lock) until this rank applied `rounds`
// rounds; still under the lock, the device buffer must hold `expected`: a
// round's copy back is complete before the thread releases the lock.
void expect_after_round(bagua_async_t averager, long long rounds, const DeviceBuffer &weights,
                        const std::vector<unsigned char> &expected, const std::string &what) {
  for (;;) {
    long long done = 0;
    bagua_async_average_lock(averager);
    expect_ok(bagua_async_average_rounds(averager, &done), what + ": rounds");
    const bool applied = done >= rounds;
    if (applied) expect(weights.read() == expected, what + ": the weights under the lock");
    bagua_async_average_unlock(averager);
    if (applied) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// A device copy that fails on the averager's thread: with an interval no
// test outlasts, the only round is the one abort wakes, and it starts with
// a copy, so every rank's thread stops there, before any message, and abort
// and destroy report the device's error instead of success.
void async_average_copy_failure(MPI_Comm comm) {
  const int count = 1024;
  DeviceBuffer weights(size_t(count) * sizeof(float));
  weights.fill(spread_weights(MPI_FLOAT, count, 0, false));
  bagua_async_t averager = nullptr;
  expect_ok(bagua_async_average_create(weights.get(), count, MPI_FLOAT, 3600000, comm, &averager),
            "async averaging, failing copies: create");
  if (averager == nullptr) return;
  device->fail_copies(true);
  const int rc = bagua_async_average_abort(averager);
  expect(rc != BAGUA_SUCCESS, "async averaging, failing copies: abort reports the failure");
  expect(std::strstr(bagua_last_error(), "fails its copies") != nullptr,
         std::string("async averaging, failing copies: message '") + bagua_last_error() + "'");
  expect(bagua_async_average_destroy(&averager) != BAGUA_SUCCESS && averager == nullptr,
         "async averaging, failing copies: destroy reports it and frees the handle");
  device->fail_copies(false);
}

// Bad input to asynchronous averaging of a device buffer gets the host
// path's errors: a misaligned buffer (the thread keeps it), a negative
// count.
void async_average_bad_input(MPI_Comm comm) {
  DeviceBuffer misaligned(64 * sizeof(float), 2);
  bagua_async_t averager = nullptr;
  expect_refused(bagua_async_average_create(misaligned.get(), 64, MPI_FLOAT, 50, comm, &averager),
                 "async averaging of a misaligned device buffer", "aligned");
  expect(averager == nullptr, "async averaging of a misaligned device buffer: no handle");
  DeviceBuffer weights(64 * sizeof(float));
  expect_refused(bagua_async_average_create(weights.get(), -1, MPI_FLOAT, 50, comm, &averager),
                 "async averaging of a device buffer, count -1", "negative");
  expect(averager == nullptr, "async averaging of a device buffer, count -1: no handle");
}

// Asynchronous averaging of a device buffer: after the first round (and
// after stopping), every rank holds the exact mean; resumed on new weights,
// the mean of those; rounds allocate no device or page-locked memory.
void async_average(MPI_Comm comm) {
  const int count = 3001;
  for (MPI_Datatype t : {MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16}) {
    const std::string what = std::string("async averaging ") + type_name(t);
    DeviceBuffer weights(size_t(count) * elem_size(t));
    weights.fill(spread_weights(t, count, 0, false));
    // Create: the staging is allocated here, once.
    bagua_async_t averager = nullptr;
    expect_ok(bagua_async_average_create(weights.get(), count, t, 50, comm, &averager), what);
    if (averager == nullptr) continue;
    const size_t allocated = device->allocations();
    expect_after_round(averager, 1, weights, spread_weights(t, count, 0, true), what);
    expect_ok(bagua_async_average_abort(averager), what + ": abort");
    expect(weights.read() == spread_weights(t, count, 0, true), what + ": after abort");
    // New weights while stopped; resume's first round averages them.
    weights.fill(spread_weights(t, count, 1, false));
    long long rounds = 0;
    expect_ok(bagua_async_average_rounds(averager, &rounds), what + ": rounds");
    expect_ok(bagua_async_average_resume(averager), what + ": resume");
    expect_after_round(averager, rounds + 1, weights, spread_weights(t, count, 1, true),
                       what + " resumed");
    expect_ok(bagua_async_average_abort(averager), what + ": abort");
    expect(weights.read() == spread_weights(t, count, 1, true), what + ": resumed, after abort");
    expect(device->allocations() == allocated,
           what + ": rounds allocated " + std::to_string(device->allocations() - allocated) +
               " buffers");
    expect_ok(bagua_async_average_destroy(&averager), what + ": destroy");
  }
}

// Staged calls read their input once the communicator's stream reached the
// call: an input written on that stream and not yet synchronized is what a
// blocking or a nonblocking exact allreduce reduces. A build without CUDA
// sets no stream (BAGUA_ERR_NOT_AVAILABLE): nothing to check there.
void after_stream_work(MPI_Comm comm) {
  void *stream = nullptr;
  expect_ok(device->create_stream(&stream), "a stream for the communicator");
  const int set = bagua_set_cuda_stream(comm, stream);
  if (set == BAGUA_ERR_NOT_AVAILABLE) {
    device->destroy_stream(stream);
    return;
  }
  expect_ok(set, "set stream");
  const int count = 70001;
  const std::vector<unsigned char> in = input(MPI_FLOAT, count);
  std::vector<unsigned char> expected = in;
  expect_ok(bagua_allreduce(MPI_IN_PLACE, expected.data(), count, MPI_FLOAT, MPI_SUM, comm),
            "allreduce on the host");
  for (bool nonblocking : {false, true}) {
    DeviceBuffer d(in.size());
    // Queued on the communicator's stream, not waited for.
    expect_ok(device->copy(d.get(), in.data(), in.size(), stream), "queue the input");
    if (nonblocking) {
      MPI_Request r = MPI_REQUEST_NULL;
      expect_ok(bagua_iallreduce(MPI_IN_PLACE, d.get(), count, MPI_FLOAT, MPI_SUM, comm, &r),
                "iallreduce after stream work");
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
      expect_ok(bagua_allreduce(MPI_IN_PLACE, d.get(), count, MPI_FLOAT, MPI_SUM, comm),
                "allreduce after stream work");
    }
    expect(d.read() == expected, std::string(nonblocking ? "iallreduce" : "allreduce") +
                                     " did not wait for the input queued on its stream");
  }
  bagua_set_cuda_stream(comm, nullptr);
  device->destroy_stream(stream);
}

#ifdef BAGUA_TEST_ON_CUDA
// The calls on a stream of the caller's: the device codec's kernels and the
// staging copies run on it.
void on_a_stream(MPI_Comm comm) {
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  expect(bagua_set_cuda_stream(comm, stream) == BAGUA_SUCCESS, "set stream");
  compare("q8 on a stream", allreduce(bagua_allreduce_q8, 100003, MPI_FLOAT, MPI_SUM, comm),
          MPI_FLOAT, 100003, false);
  compare("exact on a stream", allreduce(bagua_allreduce, 100003, MPI_FLOAT, MPI_SUM, comm),
          MPI_FLOAT, 100003, true);
  bagua_set_cuda_stream(comm, nullptr);
  cudaStreamDestroy(stream);
}
#endif

void refusals(MPI_Comm comm) {
  DeviceBuffer dev(4096);
  std::vector<float> host(1024);
  expect_refused(bagua_allreduce_q8(host.data(), dev.get(), 1024, MPI_FLOAT, MPI_SUM, comm),
                 "a host sendbuf with a device recvbuf", "both must be");
  bagua_bucket_config config;
  bagua_bucket_config_init(&config);
  bagua_bucket_comm_t bc = nullptr;
  expect(bagua_bucket_comm_create(comm, &config, &bc) == BAGUA_SUCCESS, "bucket comm");
  int id = -1;
  expect(bagua_bucket_comm_register(bc, host.data(), 1024, MPI_FLOAT, &id) == BAGUA_SUCCESS,
         "a host tensor");
  expect_refused(bagua_bucket_comm_register(bc, dev.get(), 1024, MPI_FLOAT, &id),
                 "a device tensor after a host tensor", "share one memory type");
  bagua_bucket_comm_destroy(&bc);
  config.flatten = 1;
  expect(bagua_bucket_comm_create(comm, &config, &bc) == BAGUA_SUCCESS, "bucket comm");
  expect_refused(bagua_bucket_comm_register(bc, dev.get(), 1024, MPI_FLOAT, &id),
                 "a device tensor with flatten", "flatten 0");
  bagua_bucket_comm_destroy(&bc);
}

// The device under test, wrapped so its allocations are counted, made the
// library's active device.
#ifdef BAGUA_TEST_ON_CUDA
bagua::Device *base_device() {
  int devices = 0;
  const int mine = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0 ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all == 0) return nullptr;
  cudaSetDevice(rank % devices);  // several ranks may share one GPU
  return bagua::cuda_device();
}
#else
bagua::Device *base_device() {
  static bagua_test::EmulatedDevice emulated;
  return &emulated;
}
#endif

bool pick_device() {
  bagua::Device *base = base_device();
  if (base == nullptr) return false;
  static bagua_test::CountingDevice counting(*base);
  device = &counting;
  bagua::set_active_device_for_testing(device);
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (!pick_device()) {
    if (rank == 0) std::printf("no GPU: skipped\n");
    MPI_Finalize();
    return 77;
  }
  if (device->create_stream(&test_stream) != BAGUA_SUCCESS) {
    std::fprintf(stderr, "rank %d: cannot create a stream: %s\n", rank, bagua_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  exact_and_codecs(MPI_COMM_WORLD);
  sign(MPI_COMM_WORLD, MPI_FLOAT);
  sign(MPI_COMM_WORLD, BAGUA_BFLOAT16);
  decentralized(MPI_COMM_WORLD);
  lowprec(MPI_COMM_WORLD);
  partial();
  hierarchical();
  buckets(MPI_COMM_WORLD);
  nonblocking(MPI_COMM_WORLD);
  no_allocation_when_repeated(MPI_COMM_WORLD);
  async_average(MPI_COMM_WORLD);
  async_average_copy_failure(MPI_COMM_WORLD);
  async_average_bad_input(MPI_COMM_WORLD);
  after_stream_work(MPI_COMM_WORLD);
#ifdef BAGUA_TEST_ON_CUDA
  on_a_stream(MPI_COMM_WORLD);
#endif
  refusals(MPI_COMM_WORLD);
  device->destroy_stream(test_stream);
  expect_ok(bagua_finalize(), "bagua_finalize");
  int any = 0;
  MPI_Allreduce(&failures, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s on the %s device\n", any ? "FAILED" : "passed", device->name());
  MPI_Finalize();
  return any ? 1 : 0;
}
