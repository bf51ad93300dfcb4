// Bucketed communicator and nonblocking collectives: results in closed form
// on every rank, whatever order (and thread) each rank marks tensors ready in.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

// Rank r's contribution to element i of tensor t in round k: small integers,
// so sums are exact in float.
float input(int rank, int tensor, size_t i, int round) {
  return float((rank + 1) * ((tensor + static_cast<int>(i) + round) % 7 + 1));
}
// The sum over n ranks of input(r, ...).
float expected_sum(int n, int tensor, size_t i, int round) {
  return float(n * (n + 1) / 2 * ((tensor + static_cast<int>(i) + round) % 7 + 1));
}

// A model: float tensors of varied sizes, registered on a bucketed
// communicator with a small cap so there are many buckets.
struct Model {
  std::vector<std::vector<float>> storage;
  std::vector<float *> tensors;  // current addresses (moved by flattening)
  bagua_bucket_comm_t bc = nullptr;
  int buckets = 0;

  Model(int num_tensors, size_t bucket_bytes, int flatten, MPI_Op op = MPI_SUM) {
    bagua_bucket_config config;
    REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
    config.bucket_bytes = bucket_bytes;
    config.flatten = flatten;
    config.algorithm.op = op;
    REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc) == BAGUA_SUCCESS);
    for (int t = 0; t < num_tensors; ++t) {
      storage.emplace_back(static_cast<size_t>(17 + 41 * (t % 5)));
      int id = -1;
      REQUIRE(bagua_bucket_comm_register(bc, storage.back().data(),
                                         static_cast<int>(storage.back().size()), MPI_FLOAT,
                                         &id) == BAGUA_SUCCESS);
      REQUIRE(id == t);
    }
    std::vector<void *> addrs(storage.size());
    REQUIRE(bagua_bucket_comm_finalize_registration(bc, addrs.data(), &buckets) == BAGUA_SUCCESS);
    for (void *a : addrs) tensors.push_back(static_cast<float *>(a));
  }
  ~Model() { bagua_bucket_comm_destroy(&bc); }
  size_t size(int t) const { return storage[t].size(); }

  void fill(int rank, int round) {
    for (size_t t = 0; t < tensors.size(); ++t)
      for (size_t i = 0; i < size(int(t)); ++i) tensors[t][i] = input(rank, int(t), i, round);
  }
  bool check_sum(int n, int round, double divisor = 1) {
    for (size_t t = 0; t < tensors.size(); ++t)
      for (size_t i = 0; i < size(int(t)); ++i) {
        const double want = expected_sum(n, int(t), i, round) / divisor;
        if (std::fabs(tensors[t][i] - want) > 1e-6 * want) {
          UNSCOPED_INFO("tensor " << t << " [" << i << "] = " << tensors[t][i] << ", want "
                                  << want);
          return false;
        }
      }
    return true;
  }
};

// A permutation of 0..n-1 that differs between ranks and rounds.
std::vector<int> ready_order(int n, int rank, int round) {
  std::vector<int> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(static_cast<unsigned>(rank * 7919 + round));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace

TEST_CASE("buckets: out-of-order ready marks give exact sums on every rank", "[buckets]") {
  const int rank = test::world_rank(), n = test::world_size();
  for (int flatten : {0, 1}) {
    INFO("flatten " << flatten);
    Model m(24, 1024, flatten);
    CHECK(m.buckets > 4);
    for (int round = 0; round < 3; ++round) {
      m.fill(rank, round);
      for (int t : ready_order(24, rank, round))
        REQUIRE(bagua_bucket_comm_mark_ready(m.bc, t) == BAGUA_SUCCESS);
      REQUIRE(bagua_bucket_comm_wait_all(m.bc) == BAGUA_SUCCESS);
      CHECK(test::all_ranks(m.check_sum(n, round)));
    }
  }
}

TEST_CASE("buckets: marks from several threads, average, wait and test per bucket", "[buckets]") {
  const int rank = test::world_rank(), n = test::world_size();
  Model m(16, 512, 0, BAGUA_AVG);
  for (int round = 0; round < 3; ++round) {
    m.fill(rank, round);
    const std::vector<int> order = ready_order(16, rank, round);
    // Two threads mark alternate entries of this rank's order.
    std::vector<std::thread> markers;
    for (int part = 0; part < 2; ++part)
      markers.emplace_back([&, part] {
        for (size_t k = static_cast<size_t>(part); k < order.size(); k += 2)
          CHECK(bagua_bucket_comm_mark_ready(m.bc, order[k]) == BAGUA_SUCCESS);
      });
    for (std::thread &t : markers) t.join();
    // Odd rounds poll with test, even rounds wait bucket by bucket (last first).
    for (int b = m.buckets - 1; b >= 0; --b) {
      if (round % 2 == 0) {
        REQUIRE(bagua_bucket_comm_wait(m.bc, b) == BAGUA_SUCCESS);
        continue;
      }
      int flag = 0;
      for (; !flag; std::this_thread::yield())
        REQUIRE(bagua_bucket_comm_test(m.bc, b, &flag) == BAGUA_SUCCESS);
    }
    CHECK(test::all_ranks(m.check_sum(n, round, n)));
  }
}

TEST_CASE("buckets: many buckets in flight at once", "[buckets]") {
  const int rank = test::world_rank(), n = test::world_size();
  Model m(64, 64, 1);  // every tensor is its own bucket
  REQUIRE(m.buckets == 64);
  m.fill(rank, 5);
  // Odd ranks mark in reverse order, so every bucket is started somewhere
  // before its peers reach it.
  for (int k = 0; k < 64; ++k)
    REQUIRE(bagua_bucket_comm_mark_ready(m.bc, rank % 2 ? 63 - k : k) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_wait_all(m.bc) == BAGUA_SUCCESS);
  CHECK(test::all_ranks(m.check_sum(n, 5)));
}

TEST_CASE("buckets: q8 and q4 buckets in flight at once equal the blocking call, bit for bit",
          "[buckets]") {
  const int rank = test::world_rank();
  constexpr int kTensors = 12;
  using Blocking = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  for (auto [algorithm, blocking] :
       {std::pair<bagua_algorithm, Blocking>{BAGUA_ALGORITHM_Q8, bagua_allreduce_q8},
        std::pair<bagua_algorithm, Blocking>{BAGUA_ALGORITHM_Q4, bagua_allreduce_q4}}) {
    bagua_bucket_config config;
    REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
    config.bucket_bytes = 64;  // every tensor is its own bucket
    config.algorithm = {algorithm, BAGUA_AVG};
    bagua_bucket_comm_t bc = nullptr;
    REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc) == BAGUA_SUCCESS);
    // Sizes from one block to several segments; each tensor's values span
    // a different range, so a bucket that mixed in a neighbour's values
    // would quantize differently.
    std::vector<std::vector<float>> tensors, inputs;
    for (int t = 0; t < kTensors; ++t) {
      tensors.emplace_back(size_t(100 + 9000 * t));
      int id = -1;
      REQUIRE(bagua_bucket_comm_register(bc, tensors.back().data(), int(tensors.back().size()),
                                         MPI_FLOAT, &id) == BAGUA_SUCCESS);
    }
    int buckets = 0;
    REQUIRE(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS);
    REQUIRE(buckets == kTensors);
    std::mt19937 rng(unsigned(rank + 1));
    std::normal_distribution<float> normal(0, 1);
    for (int t = 0; t < kTensors; ++t) {
      const float scale = std::ldexp(1.0f, 3 * t - 12);
      for (float &x : tensors[size_t(t)]) x = scale * normal(rng);
      inputs.push_back(tensors[size_t(t)]);
    }
    for (int t : ready_order(kTensors, rank, 0))
      REQUIRE(bagua_bucket_comm_mark_ready(bc, t) == BAGUA_SUCCESS);
    REQUIRE(bagua_bucket_comm_wait_all(bc) == BAGUA_SUCCESS);
    // The same tensors, one blocking call each, after all buckets are done.
    size_t differ = 0;
    for (int t = 0; t < kTensors; ++t) {
      const std::vector<float> &in = inputs[size_t(t)], &got = tensors[size_t(t)];
      std::vector<float> want(in.size());
      REQUIRE(blocking(in.data(), want.data(), int(in.size()), MPI_FLOAT, BAGUA_AVG,
                       MPI_COMM_WORLD) == BAGUA_SUCCESS);
      for (size_t i = 0; i < in.size(); ++i)
        differ += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
    }
    UNSCOPED_INFO("algorithm " << algorithm << ": " << differ << " elements differ");
    CHECK(test::all_ranks(differ == 0));
    REQUIRE(bagua_bucket_comm_destroy(&bc) == BAGUA_SUCCESS);
  }
}

TEST_CASE("buckets: mixed algorithms and datatypes in one model", "[buckets]") {
  const int rank = test::world_rank(), n = test::world_size();
  constexpr size_t kCount = 3000;
  bagua_bucket_comm_t bc = nullptr;
  // Three float tensors of 12 KB each in buckets of 16 KB: one bucket each;
  // then a double tensor (a datatype change starts a new bucket).
  std::vector<std::vector<float>> f(3, std::vector<float>(kCount));
  std::vector<double> d(kCount);
  bagua_bucket_config config;
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  config.bucket_bytes = 16384;
  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc) == BAGUA_SUCCESS);
  int id = 0, buckets = 0;
  for (auto &v : f)
    REQUIRE(bagua_bucket_comm_register(bc, v.data(), int(kCount), MPI_FLOAT, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_register(bc, d.data(), int(kCount), MPI_DOUBLE, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS);
  REQUIRE(buckets == 4);
  int bucket = -1;
  REQUIRE(bagua_bucket_comm_tensor_bucket(bc, 3, &bucket) == BAGUA_SUCCESS);
  CHECK(bucket == 3);
  CHECK(bagua_bucket_comm_tensor_bucket(bc, 99, &bucket) == BAGUA_ERR_INVALID_ARGUMENT);
  test::expect_error(bagua_bucket_comm_tensor_bucket(bc, 3, nullptr), BAGUA_ERR_INVALID_ARGUMENT,
                     "bucket is NULL");
  const bagua_bucket_algorithm_config exact_sum{BAGUA_BUCKET_ALLREDUCE, MPI_SUM};
  const bagua_bucket_algorithm_config q8_avg{BAGUA_BUCKET_ALLREDUCE_Q8, BAGUA_AVG};
  const bagua_bucket_algorithm_config fp16_avg{BAGUA_BUCKET_ALLREDUCE_FP16, BAGUA_AVG};
  REQUIRE(bagua_bucket_comm_set_algorithm(bc, 0, &exact_sum) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_set_algorithm(bc, 1, &q8_avg) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_set_algorithm(bc, 2, &fp16_avg) == BAGUA_SUCCESS);
  // Bucket 3 keeps the default: exact average.
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < kCount; ++i) {
      for (auto &v : f) v[i] = input(rank, 0, i, round);
      d[i] = input(rank, 1, i, round);
    }
    for (int t : ready_order(4, rank, round))
      REQUIRE(bagua_bucket_comm_mark_ready(bc, t) == BAGUA_SUCCESS);
    REQUIRE(bagua_bucket_comm_wait_all(bc) == BAGUA_SUCCESS);
    // q8: each value quantized at most twice, inputs span at most 7 * n.
    const double q8_tol = 2.0 * 7 * n / 510 + 1e-3, fp16_tol = 1e-2;
    bool ok = true;
    for (size_t i = 0; i < kCount; ++i) {
      const double sum = expected_sum(n, 0, i, round), avg = sum / n;
      ok = ok && f[0][i] == float(sum);
      ok = ok && std::fabs(f[1][i] - avg) <= q8_tol;
      ok = ok && std::fabs(f[2][i] - avg) <= fp16_tol * avg;
      ok = ok && std::fabs(d[i] - expected_sum(n, 1, i, round) / n) <= 1e-12;
    }
    CHECK(test::all_ranks(ok));
  }
  REQUIRE(bagua_bucket_comm_destroy(&bc) == BAGUA_SUCCESS);
}

TEST_CASE("buckets: registration and usage errors are clear", "[buckets][errors]") {
  bagua_bucket_comm_t bc = nullptr;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_NULL, nullptr, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  CHECK(bc == nullptr);
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, nullptr, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "out is NULL");
  test::expect_error(bagua_bucket_config_init(nullptr), BAGUA_ERR_INVALID_ARGUMENT,
                     "config is NULL");
  bagua_bucket_config config;
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  CHECK(config.bucket_bytes == BAGUA_BUCKET_DEFAULT_BYTES);
  config.bucket_bytes = 0;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "bucket_bytes");
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  config.flatten = 2;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "flatten");
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  const int bad_algorithm = 42;  // as a C caller could pass
  std::memcpy(&config.algorithm.algorithm, &bad_algorithm, sizeof bad_algorithm);
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "algorithm 42");
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  config.algorithm.op = MPI_PROD;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_UNSUPPORTED_OP, "op");

  // Marks never made: wait gives up after BAGUA_TIMEOUT_MS (read at create).
  int id = -1, buckets = 0;
  std::vector<float> a(100), b(100);
  setenv("BAGUA_TIMEOUT_MS", "200", 1);
  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, nullptr, &bc) == BAGUA_SUCCESS);
  unsetenv("BAGUA_TIMEOUT_MS");
  REQUIRE(bagua_bucket_comm_register(bc, a.data(), 10, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_register(bc, b.data(), 10, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_mark_ready(bc, 0) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_wait_all(bc), BAGUA_ERR_TIMEOUT, "first: tensor 1");
  // The timed-out wait broke the bucketed communicator: later calls say so
  // at once instead of waiting again.
  test::expect_error(bagua_bucket_comm_mark_ready(bc, 1), BAGUA_ERR_COMM_BROKEN, "timed out");
  test::expect_error(bagua_bucket_comm_wait(bc, 0), BAGUA_ERR_COMM_BROKEN, "timed out");
  REQUIRE(bagua_bucket_comm_destroy(&bc) == BAGUA_SUCCESS);

  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, nullptr, &bc) == BAGUA_SUCCESS);
  std::vector<double> c(10);
  test::expect_error(bagua_bucket_comm_wait_all(bc), BAGUA_ERR_INVALID_ARGUMENT,
                     "nothing to wait for");
  test::expect_error(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets),
                     BAGUA_ERR_INVALID_ARGUMENT, "no tensor");
  test::expect_error(bagua_bucket_comm_register(nullptr, a.data(), 100, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "bc is NULL");
  test::expect_error(bagua_bucket_comm_register(bc, nullptr, 100, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "ptr is NULL");
  test::expect_error(bagua_bucket_comm_register(bc, a.data(), -1, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_bucket_comm_register(bc, a.data(), 100, MPI_INT, &id),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  test::expect_error(bagua_bucket_comm_register(bc, a.data(), 100, MPI_FLOAT, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "tensor_id is NULL");
  REQUIRE(bagua_bucket_comm_register(bc, a.data() + 10, 50, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_register(bc, a.data(), 11, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "overlaps tensor 0");
  test::expect_error(bagua_bucket_comm_register(bc, a.data() + 59, 2, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "overlaps tensor 0");
  test::expect_error(bagua_bucket_comm_register(bc, a.data() + 20, 1, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "overlaps tensor 0");
  REQUIRE(bagua_bucket_comm_register(bc, a.data(), 10, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_register(bc, a.data() + 60, 40, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_register(bc, c.data(), 10, MPI_DOUBLE, &id) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_register(bc, b.data(), 100, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_mark_ready(bc, 0), BAGUA_ERR_INVALID_ARGUMENT,
                     "finalize_registration");
  REQUIRE(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS);
  // A datatype change closes a bucket: floats, the double, floats.
  CHECK(buckets == 3);
  test::expect_error(bagua_bucket_comm_register(bc, b.data(), 1, MPI_FLOAT, &id),
                     BAGUA_ERR_INVALID_ARGUMENT, "already finalized");
  test::expect_error(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets),
                     BAGUA_ERR_INVALID_ARGUMENT, "already finalized");
  test::expect_error(bagua_bucket_comm_mark_ready(bc, 5), BAGUA_ERR_INVALID_ARGUMENT, "unknown");
  test::expect_error(bagua_bucket_comm_mark_ready(bc, -1), BAGUA_ERR_INVALID_ARGUMENT, "unknown");
  test::expect_error(bagua_bucket_comm_wait(bc, 3), BAGUA_ERR_INVALID_ARGUMENT, "does not exist");
  int flag = 0;
  test::expect_error(bagua_bucket_comm_test(bc, 0, nullptr), BAGUA_ERR_INVALID_ARGUMENT, "flag");
  const bagua_bucket_algorithm_config q8{BAGUA_BUCKET_ALLREDUCE_Q8, BAGUA_AVG};
  const bagua_bucket_algorithm_config q8_max{BAGUA_BUCKET_ALLREDUCE_Q8, MPI_MAX};
  test::expect_error(bagua_bucket_comm_set_algorithm(bc, 1, &q8), BAGUA_ERR_UNSUPPORTED_DATATYPE,
                     "bucket 1");
  test::expect_error(bagua_bucket_comm_set_algorithm(bc, -1, &q8), BAGUA_ERR_UNSUPPORTED_DATATYPE,
                     "bucket 1");
  test::expect_error(bagua_bucket_comm_set_algorithm(bc, 0, &q8_max), BAGUA_ERR_UNSUPPORTED_OP,
                     "MPI_SUM or BAGUA_AVG");
  test::expect_error(bagua_bucket_comm_set_algorithm(bc, 0, nullptr), BAGUA_ERR_INVALID_ARGUMENT,
                     "algorithm is NULL");
  // Bucket 0 holds tensors 0..2: mark two of them.
  REQUIRE(bagua_bucket_comm_mark_ready(bc, 0) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_mark_ready(bc, 1) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_mark_ready(bc, 1), BAGUA_ERR_INVALID_ARGUMENT,
                     "already marked ready");
  test::expect_error(bagua_bucket_comm_set_algorithm(bc, 0, &q8), BAGUA_ERR_INVALID_ARGUMENT,
                     "between rounds");
  REQUIRE(bagua_bucket_comm_test(bc, 0, &flag) == BAGUA_SUCCESS);
  CHECK(flag == 0);
  REQUIRE(bagua_bucket_comm_mark_ready(bc, 2) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_wait(bc, 0) == BAGUA_SUCCESS);
  // The round ended: tensors can be marked again.
  REQUIRE(bagua_bucket_comm_mark_ready(bc, 1) == BAGUA_SUCCESS);
  CHECK(bagua_bucket_comm_destroy(&bc) == BAGUA_SUCCESS);
  CHECK(bc == nullptr);
  // Destroying again (a NULL handle) and a NULL pointer are no-ops.
  CHECK(bagua_bucket_comm_destroy(&bc) == BAGUA_SUCCESS);
  CHECK(bagua_bucket_comm_destroy(nullptr) == BAGUA_SUCCESS);
}

TEST_CASE("buckets: ranks that register different tensors get a mismatch", "[buckets][errors]") {
  if (test::world_size() < 2) return;
  bagua_bucket_comm_t bc = nullptr;
  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, nullptr, &bc) == BAGUA_SUCCESS);
  std::vector<float> a(20);
  int id = 0, buckets = 0;
  REQUIRE(bagua_bucket_comm_register(bc, a.data(), 10 + (test::world_rank() == 0), MPI_FLOAT,
                                     &id) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets),
                     BAGUA_ERR_MISMATCH, "different tensors");
  bagua_bucket_comm_destroy(&bc);
}

TEST_CASE("iallreduce: requests complete with MPI_Wait, MPI_Waitall and MPI_Test", "[iallreduce]") {
  const int rank = test::world_rank(), n = test::world_size();
  constexpr int kCalls = 6;
  std::vector<std::vector<float>> send(kCalls), recv(kCalls);
  std::vector<MPI_Request> requests(kCalls);
  // Sizes on both sides of the ring threshold; the last call is in place.
  for (int c = 0; c < kCalls; ++c) {
    const size_t count = c % 2 ? 50000 : 33;
    send[c].resize(count);
    recv[c].resize(count);
    for (size_t i = 0; i < count; ++i) send[c][i] = input(rank, c, i, 0);
    if (c == kCalls - 1) recv[c] = send[c];
    const void *src = c == kCalls - 1 ? MPI_IN_PLACE : send[c].data();
    REQUIRE(bagua_iallreduce(src, recv[c].data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                             &requests[c]) == BAGUA_SUCCESS);
  }
  REQUIRE(MPI_Wait(&requests[0], MPI_STATUS_IGNORE) == MPI_SUCCESS);
  CHECK(requests[0] == MPI_REQUEST_NULL);
  int done = 0;
  while (!done) REQUIRE(MPI_Test(&requests[1], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  REQUIRE(MPI_Waitall(kCalls - 2, requests.data() + 2, MPI_STATUSES_IGNORE) == MPI_SUCCESS);
  bool ok = true;
  for (int c = 0; c < kCalls; ++c)
    for (size_t i = 0; i < recv[c].size(); ++i) ok = ok && recv[c][i] == expected_sum(n, c, i, 0);
  CHECK(test::all_ranks(ok));

  // q8 and q4: each value quantized at most twice, inputs span at most 7 * n,
  // error <= range / 510 (q8) or range / 30 (q4) per quantization.
  using Start = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request *);
  for (auto [start, steps] : {std::pair<Start, double>{bagua_iallreduce_q8, 510},
                              std::pair<Start, double>{bagua_iallreduce_q4, 30}}) {
    std::vector<float> q(4096), q_out(4096);
    for (size_t i = 0; i < q.size(); ++i) q[i] = input(rank, 0, i, 0);
    MPI_Request r;
    REQUIRE(start(q.data(), q_out.data(), 4096, MPI_FLOAT, BAGUA_AVG, MPI_COMM_WORLD, &r) ==
            BAGUA_SUCCESS);
    REQUIRE(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    ok = true;
    for (size_t i = 0; i < q.size(); ++i)
      ok = ok && std::fabs(q_out[i] - expected_sum(n, 0, i, 0) / n) <= 2.0 * 7 * n / steps + 1e-3;
    INFO("steps per block range " << steps);
    CHECK(test::all_ranks(ok));
  }
}

TEST_CASE("iallreduce_sign: the blocking call's results and residuals, its state held until done",
          "[iallreduce][sign]") {
  const int rank = test::world_rank();
  constexpr int kCount = 3001;
  bagua_sign_state_t blocking = nullptr, nonblocking = nullptr;
  REQUIRE(bagua_sign_state_create(kCount, MPI_COMM_WORLD, &blocking) == BAGUA_SUCCESS);
  REQUIRE(bagua_sign_state_create(kCount, MPI_COMM_WORLD, &nonblocking) == BAGUA_SUCCESS);
  std::vector<float> in(kCount), a(kCount), b(kCount);
  // Three calls of each build residuals; every result matches bit for bit.
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = input(rank, 0, i, round);
    REQUIRE(bagua_allreduce_sign(in.data(), a.data(), kCount, MPI_FLOAT, BAGUA_AVG, MPI_COMM_WORLD,
                                 blocking) == BAGUA_SUCCESS);
    MPI_Request r;
    REQUIRE(bagua_iallreduce_sign(in.data(), b.data(), kCount, MPI_FLOAT, BAGUA_AVG, MPI_COMM_WORLD,
                                  nonblocking, &r) == BAGUA_SUCCESS);
    REQUIRE(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    INFO("round " << round);
    CHECK(a == b);
  }
  std::vector<float> saved_a(2 * kCount), saved_b(2 * kCount);
  REQUIRE(bagua_sign_state_save(blocking, saved_a.data(), 2 * kCount) == BAGUA_SUCCESS);
  REQUIRE(bagua_sign_state_save(nonblocking, saved_b.data(), 2 * kCount) == BAGUA_SUCCESS);
  CHECK(saved_a == saved_b);

  // Rank 0 starts a call while the others hold at the barrier, so the call
  // still holds its state when rank 0 tries to use it.
  MPI_Request held = MPI_REQUEST_NULL;
  const auto start_held = [&] {
    REQUIRE(bagua_iallreduce_sign(in.data(), b.data(), kCount, MPI_FLOAT, BAGUA_AVG, MPI_COMM_WORLD,
                                  nonblocking, &held) == BAGUA_SUCCESS);
  };
  if (rank == 0) {
    start_held();
    MPI_Request other;
    test::expect_error(bagua_iallreduce_sign(in.data(), a.data(), kCount, MPI_FLOAT, BAGUA_AVG,
                                             MPI_COMM_WORLD, nonblocking, &other),
                       BAGUA_ERR_INVALID_ARGUMENT, "in use by another call");
    CHECK(other == MPI_REQUEST_NULL);
    test::expect_error(bagua_allreduce_sign(in.data(), a.data(), kCount, MPI_FLOAT, BAGUA_AVG,
                                            MPI_COMM_WORLD, nonblocking),
                       BAGUA_ERR_INVALID_ARGUMENT, "in use by another call");
    test::expect_error(bagua_sign_state_save(nonblocking, saved_b.data(), 2 * kCount),
                       BAGUA_ERR_INVALID_ARGUMENT, "in use by a call in flight");
    test::expect_error(bagua_sign_state_destroy(&nonblocking), BAGUA_ERR_INVALID_ARGUMENT,
                       "in use by a call in flight");
    CHECK(nonblocking != nullptr);
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    start_held();
  }
  REQUIRE(MPI_Wait(&held, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  // Done: the state is free again.
  CHECK(bagua_sign_state_save(nonblocking, saved_b.data(), 2 * kCount) == BAGUA_SUCCESS);
  CHECK(bagua_sign_state_destroy(&nonblocking) == BAGUA_SUCCESS);
  CHECK(bagua_sign_state_destroy(&blocking) == BAGUA_SUCCESS);
  MPI_Request r;
  test::expect_error(bagua_iallreduce_alg(in.data(), a.data(), kCount, MPI_FLOAT, BAGUA_AVG,
                                          MPI_COMM_WORLD, BAGUA_ALGORITHM_SIGN, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "call bagua_iallreduce_sign");
}

namespace {

// What a completion callback saw; set on bagua's progress thread.
struct Seen {
  std::atomic<int> calls{0};
  std::atomic<int> status{-1};
};

void record_completion(void *arg, int status, const char *) {
  auto *seen = static_cast<Seen *>(arg);
  seen->status = status;
  ++seen->calls;
}

// Waits (at most a minute) until the callback ran.
bool called_back(const Seen &seen) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (seen.calls == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return seen.calls == 1;
}

}  // namespace

TEST_CASE("iallreduce_ex: the completion callback reports the end, with or without a request",
          "[iallreduce]") {
  const int rank = test::world_rank(), n = test::world_size();
  constexpr int kCount = 50000;
  std::vector<float> in(kCount), out(kCount, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = input(rank, 1, i, 0);
  // No request: the callback alone says the result is in place.
  Seen alone;
  bagua_iallreduce_params params = BAGUA_IALLREDUCE_PARAMS_INITIALIZER;
  params.complete = record_completion;
  params.complete_arg = &alone;
  REQUIRE(bagua_iallreduce_ex(in.data(), out.data(), kCount, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                              &params, nullptr) == BAGUA_SUCCESS);
  REQUIRE(called_back(alone));
  CHECK(alone.status == BAGUA_SUCCESS);
  bool ok = true;
  for (size_t i = 0; i < out.size(); ++i) ok = ok && out[i] == expected_sum(n, 1, i, 0);
  CHECK(test::all_ranks(ok));
  // With a request: the callback has run when MPI_Wait returns; q8 and sign
  // (its state) through the same struct.
  bagua_sign_state_t state = nullptr;
  REQUIRE(bagua_sign_state_create(kCount, MPI_COMM_WORLD, &state) == BAGUA_SUCCESS);
  for (bagua_algorithm algorithm : {BAGUA_ALGORITHM_Q8, BAGUA_ALGORITHM_SIGN}) {
    Seen with_request;
    params.algorithm = algorithm;
    params.state = algorithm == BAGUA_ALGORITHM_SIGN ? state : nullptr;
    params.complete_arg = &with_request;
    MPI_Request r;
    REQUIRE(bagua_iallreduce_ex(in.data(), out.data(), kCount, MPI_FLOAT, BAGUA_AVG, MPI_COMM_WORLD,
                                &params, &r) == BAGUA_SUCCESS);
    REQUIRE(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    INFO(bagua_algorithm_name(algorithm));
    CHECK(with_request.calls == 1);
    CHECK(with_request.status == BAGUA_SUCCESS);
  }
  CHECK(bagua_sign_state_destroy(&state) == BAGUA_SUCCESS);
}

TEST_CASE("iallreduce_ex: bad options are refused before starting", "[iallreduce][errors]") {
  float a[8] = {}, b[8] = {};
  MPI_Request r;
  test::expect_error(bagua_iallreduce_ex(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, nullptr, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "params is NULL");
  bagua_iallreduce_params params = BAGUA_IALLREDUCE_PARAMS_INITIALIZER;
  test::expect_error(
      bagua_iallreduce_ex(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &params, nullptr),
      BAGUA_ERR_INVALID_ARGUMENT, "request is NULL");
  params.struct_size = 8;
  test::expect_error(bagua_iallreduce_ex(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &params, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "struct_size");
  bagua_sign_state_t state = nullptr;
  REQUIRE(bagua_sign_state_create(8, MPI_COMM_WORLD, &state) == BAGUA_SUCCESS);
  params = BAGUA_IALLREDUCE_PARAMS_INITIALIZER;
  params.algorithm = BAGUA_ALGORITHM_Q8;
  params.state = state;
  test::expect_error(bagua_iallreduce_ex(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &params, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "keeps none");
  params.algorithm = BAGUA_ALGORITHM_SIGN;
  params.state = nullptr;
  test::expect_error(bagua_iallreduce_ex(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &params, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  // bagua_iallreduce_sign itself: no state, a state of another count, a
  // negative count, an unsupported datatype and op, no request.
  test::expect_error(
      bagua_iallreduce_sign(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, nullptr, &r),
      BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  test::expect_error(bagua_iallreduce_sign(a, b, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, state, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "created for count 8");
  test::expect_error(bagua_iallreduce_sign(a, b, -1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, state, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  double d[8] = {}, e[8] = {};
  test::expect_error(bagua_iallreduce_sign(d, e, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, state, &r),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "MPI_FLOAT");
  test::expect_error(bagua_iallreduce_sign(a, b, 8, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, state, &r),
                     BAGUA_ERR_UNSUPPORTED_OP, "MPI_SUM");
  test::expect_error(
      bagua_iallreduce_sign(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, state, nullptr),
      BAGUA_ERR_INVALID_ARGUMENT, "request is NULL");
  // None of the refusals kept the state.
  MPI_Request held;
  REQUIRE(bagua_iallreduce_sign(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, state, &held) ==
          BAGUA_SUCCESS);
  REQUIRE(MPI_Wait(&held, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  CHECK(bagua_sign_state_destroy(&state) == BAGUA_SUCCESS);
}

TEST_CASE("iallreduce: bad arguments are refused before starting", "[iallreduce][errors]") {
  float a[8] = {}, b[8] = {};
  MPI_Request r = MPI_REQUEST_NULL;
  test::expect_error(bagua_iallreduce(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "request is NULL");
  test::expect_error(bagua_iallreduce(nullptr, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
  CHECK(r == MPI_REQUEST_NULL);
  test::expect_error(bagua_iallreduce(a, b, -1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_iallreduce(a, b, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  test::expect_error(bagua_iallreduce(a, b, 8, MPI_FLOAT, MPI_PROD, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_UNSUPPORTED_OP, "op");
  test::expect_error(bagua_iallreduce(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_NULL, &r),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  double d[8] = {}, e[8] = {};
  test::expect_error(bagua_iallreduce_q8(d, e, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "MPI_FLOAT");
  test::expect_error(bagua_iallreduce_q8(a, b, 8, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_UNSUPPORTED_OP, "MPI_SUM or BAGUA_AVG");
  test::expect_error(bagua_iallreduce_q4(d, e, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "MPI_FLOAT");
}

TEST_CASE("buckets and iallreduce: a thousand rounds leave nothing behind",
          "[buckets][iallreduce][leaks]") {
  const int rank = test::world_rank(), n = test::world_size();
  constexpr int kRounds = 1000;
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  Model m(4, 200, 0);
  bool ok = true;
  for (int round = 0; round < kRounds; ++round) {
    m.fill(rank, round);
    for (int t : {3, 1, 2, 0}) REQUIRE(bagua_bucket_comm_mark_ready(m.bc, t) == BAGUA_SUCCESS);
    float x = float(rank + round), y = 0;
    MPI_Request r;
    REQUIRE(bagua_iallreduce(&x, &y, 1, MPI_FLOAT, MPI_SUM, comm, &r) == BAGUA_SUCCESS);
    REQUIRE(bagua_bucket_comm_wait_all(m.bc) == BAGUA_SUCCESS);
    REQUIRE(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    ok = ok && y == float(n * (n - 1) / 2 + n * round) && m.check_sum(n, round);
  }
  CHECK(test::all_ranks(ok));
  MPI_Comm_free(&comm);  // frees the nonblocking state of comm
  // Bucketed communicators created and destroyed repeatedly.
  for (int k = 0; k < 20; ++k) Model again(3, 100, k % 2);
}

TEST_CASE("buckets: a default algorithm a bucket cannot run fails finalize, which can retry",
          "[buckets][errors]") {
  bagua_bucket_config config;
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  config.algorithm = {BAGUA_BUCKET_ALLREDUCE_Q8, BAGUA_AVG};
  bagua_bucket_comm_t bc = nullptr;
  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc) == BAGUA_SUCCESS);
  std::vector<double> d(8);
  std::vector<float> f(8);
  int id = 0, buckets = 0;
  REQUIRE(bagua_bucket_comm_register(bc, d.data(), 8, MPI_DOUBLE, &id) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "bucket 0");
  // Registration is still open.
  REQUIRE(bagua_bucket_comm_register(bc, f.data(), 8, MPI_FLOAT, &id) == BAGUA_SUCCESS);
  test::expect_error(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "bucket 0");
  bagua_bucket_comm_destroy(&bc);
}

namespace {

// 1 + the largest bucket id of any tensor: the number of buckets now.
int bucket_count(bagua_bucket_comm_t bc, int tensors) {
  int most = -1;
  for (int t = 0; t < tensors; ++t) {
    int b = -1;
    REQUIRE(bagua_bucket_comm_tensor_bucket(bc, t, &b) == BAGUA_SUCCESS);
    most = std::max(most, b);
  }
  return most + 1;
}

}  // namespace

TEST_CASE("buckets: the automatic bucket size tries 1 and 2 MiB and every rank keeps one",
          "[buckets][auto]") {
  const int rank = test::world_rank(), n = test::world_size();
  // Four tensors of 512 KiB: a 1 MiB cap forms 2 buckets, 2 MiB one; the
  // larger caps and the 10 MiB default form the same one, so are not tried.
  constexpr int kTensors = 4;
  constexpr size_t kElems = 128 * 1024;
  std::vector<std::vector<float>> storage(kTensors, std::vector<float>(kElems));
  bagua_bucket_config config;
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  CHECK(config.auto_bucket_bytes == 0);
  config.auto_bucket_bytes = 1;
  config.algorithm.op = MPI_SUM;
  bagua_bucket_comm_t bc = nullptr;
  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc) == BAGUA_SUCCESS);
  for (int t = 0; t < kTensors; ++t) {
    int id = -1;
    REQUIRE(bagua_bucket_comm_register(bc, storage[t].data(), int(kElems), MPI_FLOAT, &id) ==
            BAGUA_SUCCESS);
  }
  int buckets = 0;
  REQUIRE(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS);
  CHECK(buckets == 2);  // the first candidate, 1 MiB
  const bagua_bucket_algorithm_config exact{BAGUA_ALGORITHM_EXACT, MPI_SUM};
  test::expect_error(bagua_bucket_comm_set_algorithm(bc, 0, &exact), BAGUA_ERR_INVALID_ARGUMENT,
                     "tuned");
  // One warm-up and two timed steps per candidate, then the agreed choice.
  const std::vector<int> trial_buckets = {2, 2, 2, 1, 1, 1};
  std::vector<int> seen;
  for (int step = 0; step < 10; ++step) {
    seen.push_back(bucket_count(bc, kTensors));
    for (int t = 0; t < kTensors; ++t)
      for (size_t i = 0; i < kElems; ++i) storage[t][i] = input(rank, t, i, step);
    for (int t : ready_order(kTensors, rank, step))
      REQUIRE(bagua_bucket_comm_mark_ready(bc, t) == BAGUA_SUCCESS);
    REQUIRE(bagua_bucket_comm_wait_all(bc) == BAGUA_SUCCESS);
    bool exact_sums = true;
    for (int t = 0; t < kTensors; ++t)
      for (size_t i = 0; i < kElems; i += 97)
        exact_sums = exact_sums && storage[t][i] == expected_sum(n, t, i, step);
    CHECK(test::all_ranks(exact_sums));
  }
  CHECK(std::vector<int>(seen.begin(), seen.begin() + 6) == trial_buckets);
  // After the decision the layout stays, and is the same on every rank.
  const int chosen = seen[6];
  CHECK((chosen == 1 || chosen == 2));
  CHECK(seen[9] == chosen);
  int low = chosen, high = chosen;
  MPI_Allreduce(MPI_IN_PLACE, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(low == high);
  REQUIRE(bagua_bucket_comm_set_algorithm(bc, 0, &exact) == BAGUA_SUCCESS);
  bagua_bucket_comm_destroy(&bc);
}

TEST_CASE("buckets: automatic bucket size: bad settings are refused; old configs still work",
          "[buckets][auto][errors]") {
  bagua_bucket_config config;
  bagua_bucket_comm_t bc = nullptr;
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  config.auto_bucket_bytes = 2;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "auto_bucket_bytes is 2");
  config.auto_bucket_bytes = 1;
  config.flatten = 1;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "needs flatten 0");
  setenv("BAGUA_BUCKET_AUTO", "yes", 1);
  test::expect_error(bagua_bucket_config_init(&config), BAGUA_ERR_INVALID_ARGUMENT,
                     "BAGUA_BUCKET_AUTO");
  setenv("BAGUA_BUCKET_AUTO", "1", 1);
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  CHECK(config.auto_bucket_bytes == 1);
  unsetenv("BAGUA_BUCKET_AUTO");
  // A caller compiled before auto_bucket_bytes existed: its struct ends before it.
  REQUIRE(bagua_bucket_config_init(&config) == BAGUA_SUCCESS);
  config.struct_size = offsetof(bagua_bucket_config, auto_bucket_bytes);
  REQUIRE(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc) == BAGUA_SUCCESS);
  bagua_bucket_comm_destroy(&bc);
  config.struct_size = 3;
  test::expect_error(bagua_bucket_comm_create(MPI_COMM_WORLD, &config, &bc),
                     BAGUA_ERR_INVALID_ARGUMENT, "struct_size");
}
