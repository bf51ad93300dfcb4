// Asynchronous model averaging: buffers converge to the common mean once the
// callers stop writing; abort/resume and create/free cycle without hangs or
// leaked threads; bad arguments are clear errors.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>

#include "helpers.hpp"

using test::Type;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

double initial(int rank, size_t i) { return double((rank * 5 + i) % 11); }
double increment(int rank, size_t i) { return 0.125 * double((rank + i) % 3); }

}  // namespace

TEST_CASE("async averaging converges to the mean of everything the ranks wrote", "[async]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 3001;
  const int writes = 20;
  for (Type t : {Type::f32, Type::f64, Type::f16}) {
    test::TypedBuffer w(t, count);
    for (size_t i = 0; i < count; ++i) w.set(i, initial(rank, i));
    bagua_async_t handle = nullptr;
    REQUIRE(bagua_async_average_create(w.data(), int(count), test::mpi_type(t), 2, MPI_COMM_WORLD,
                                       &handle) == BAGUA_SUCCESS);
    // "Training": writes under the lock while the thread averages.
    for (int k = 0; k < writes; ++k) {
      REQUIRE(bagua_async_average_lock(handle) == BAGUA_SUCCESS);
      for (size_t i = 0; i < count; ++i) w.set(i, w.get(i) + increment(rank, i));
      REQUIRE(bagua_async_average_unlock(handle) == BAGUA_SUCCESS);
      sleep_ms(1);
    }
    // Averaging keeps every write, so the ranks approach the mean of
    // initial + writes * increment. Poll (all ranks together) until close.
    // float16 rounds each partial sum of the allreduce (values below 64: an
    // ulp of at most 1/32); the wider types only round the average.
    const double tolerance = t == Type::f16 ? 0.05 : 1e-4;
    double worst = 0;
    for (int poll = 0; poll < 2000; ++poll) {
      double mine = 0;
      bagua_async_average_lock(handle);
      for (size_t i = 0; i < count; ++i) {
        double mean = 0;
        for (int r = 0; r < n; ++r) mean += initial(r, i) + writes * increment(r, i);
        mine = std::max(mine, std::fabs(w.get(i) - mean / n));
      }
      bagua_async_average_unlock(handle);
      MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (worst <= tolerance) break;
      sleep_ms(10);
    }
    INFO(test::type_name(t) << ": largest distance from the mean " << worst << " ("
                            << bagua_last_error() << ")");
    CHECK(worst <= tolerance);
    CHECK(bagua_async_average_abort(handle) == BAGUA_SUCCESS);
    // Converging took applied rounds, the same ones on every rank.
    long long rounds = -1, fewest = 0, most = 0;
    CHECK(bagua_async_average_rounds(handle, &rounds) == BAGUA_SUCCESS);
    MPI_Allreduce(&rounds, &fewest, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&rounds, &most, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    CHECK(fewest >= 1);
    CHECK(fewest == most);
    CHECK(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
    CHECK(handle == nullptr);
  }
}

TEST_CASE("a non-finite value in one rank's weights skips the rounds, changing no weights",
          "[async]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 1001;
  std::vector<float> w(count, float(rank));
  if (rank == n - 1) w[5] = NAN;
  bagua_async_t handle = nullptr;
  REQUIRE(bagua_async_average_create(w.data(), int(count), MPI_FLOAT, 1, MPI_COMM_WORLD, &handle) ==
          BAGUA_SUCCESS);
  sleep_ms(50);  // rounds run meanwhile (how many does not matter)
  REQUIRE(bagua_async_average_lock(handle) == BAGUA_SUCCESS);
  bool unchanged = true;
  for (size_t i = 0; i < count; ++i)
    unchanged = unchanged && (rank == n - 1 && i == 5 ? std::isnan(w[i]) : w[i] == float(rank));
  // Recovery: the rank replaces its bad value; the next rounds average.
  w[5] = float(rank);
  REQUIRE(bagua_async_average_unlock(handle) == BAGUA_SUCCESS);
  CHECK(unchanged);
  const float mean = float(n - 1) / 2;
  bool converged = false;
  for (int poll = 0; poll < 2000 && !converged; ++poll) {
    bagua_async_average_lock(handle);
    bool mine = true;
    for (float v : w) mine = mine && std::fabs(v - mean) <= 1e-5f;
    bagua_async_average_unlock(handle);
    converged = test::all_ranks(mine);
    if (!converged) sleep_ms(10);
  }
  CHECK(converged);
  CHECK(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
}

TEST_CASE("abort and resume cycle many times without a hang or a leaked thread", "[async]") {
  const int rank = test::world_rank();
  std::vector<float> w(257, float(rank));
  const int threads_before = test::thread_count();
  bagua_async_t handle = nullptr;
  REQUIRE(bagua_async_average_create(w.data(), int(w.size()), MPI_FLOAT, 1, MPI_COMM_WORLD,
                                     &handle) == BAGUA_SUCCESS);
  for (int cycle = 0; cycle < 40; ++cycle) {
    // Ranks arrive at abort and resume at different times (rank 0 first).
    if (rank != 0) sleep_ms(cycle % 4);
    INFO("cycle " << cycle << ": " << bagua_last_error());
    REQUIRE(bagua_async_average_abort(handle) == BAGUA_SUCCESS);
    REQUIRE(bagua_async_average_abort(handle) == BAGUA_SUCCESS);  // stopped: a no-op
    if (rank == 0) sleep_ms(cycle % 3);
    REQUIRE(bagua_async_average_resume(handle) == BAGUA_SUCCESS);
  }
  REQUIRE(bagua_async_average_resume(handle) == BAGUA_SUCCESS);  // running: a no-op
  REQUIRE(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
  // Create/free cycles, freeing a running averager directly.
  for (int cycle = 0; cycle < 10; ++cycle) {
    REQUIRE(bagua_async_average_create(w.data(), int(w.size()), MPI_FLOAT, 0, MPI_COMM_WORLD,
                                       &handle) == BAGUA_SUCCESS);
    if (rank == 0) sleep_ms(2);
    REQUIRE(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
  }
  CHECK(test::thread_count() == threads_before);
  // Any averaging leaves the ranks' values in [0, n - 1].
  for (float v : w) CHECK((v >= 0 && v <= float(test::world_size() - 1)));
}

TEST_CASE("one rank aborting stops every rank's thread", "[async]") {
  if (test::world_size() < 2) return;
  const int rank = test::world_rank();
  std::vector<double> w(64, double(rank));
  bagua_async_t handle = nullptr;
  REQUIRE(bagua_async_average_create(w.data(), int(w.size()), MPI_DOUBLE, 1, MPI_COMM_WORLD,
                                     &handle) == BAGUA_SUCCESS);
  if (rank == 0) REQUIRE(bagua_async_average_abort(handle) == BAGUA_SUCCESS);
  // Rank 0's abort returned, so every thread agreed to stop in the same round:
  // no value changes any more, whatever the others do before their abort.
  MPI_Barrier(MPI_COMM_WORLD);
  bagua_async_average_lock(handle);
  const std::vector<double> frozen = w;
  bagua_async_average_unlock(handle);
  long long rounds_then = -1, rounds_now = -2;
  REQUIRE(bagua_async_average_rounds(handle, &rounds_then) == BAGUA_SUCCESS);
  sleep_ms(30);
  bagua_async_average_lock(handle);
  CHECK(w == frozen);
  bagua_async_average_unlock(handle);
  REQUIRE(bagua_async_average_rounds(handle, &rounds_now) == BAGUA_SUCCESS);
  CHECK(rounds_now == rounds_then);
  REQUIRE(bagua_async_average_abort(handle) == BAGUA_SUCCESS);
  REQUIRE(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
}

TEST_CASE("async averaging rejects bad arguments clearly", "[async][errors]") {
  float a[8] = {};
  bagua_async_t handle = nullptr;
  auto expect = [](int rc, int code, const char *words) {
    INFO("message: " << bagua_last_error());
    CHECK(rc == code);
    CHECK(std::string(bagua_last_error()).find(words) != std::string::npos);
  };
  const MPI_Comm w = MPI_COMM_WORLD;
  expect(bagua_async_average_create(a, 8, MPI_FLOAT, 5, w, nullptr), BAGUA_ERR_INVALID_ARGUMENT,
         "handle is NULL");
  expect(bagua_async_average_create(nullptr, 8, MPI_FLOAT, 5, w, &handle),
         BAGUA_ERR_INVALID_ARGUMENT, "buf is NULL");
  expect(bagua_async_average_create(a, -1, MPI_FLOAT, 5, w, &handle), BAGUA_ERR_INVALID_ARGUMENT,
         "negative");
  expect(bagua_async_average_create(a, 8, MPI_INT, 5, w, &handle), BAGUA_ERR_UNSUPPORTED_DATATYPE,
         "datatype");
  expect(bagua_async_average_create(a, 8, MPI_FLOAT, -5, w, &handle), BAGUA_ERR_INVALID_ARGUMENT,
         "interval_ms -5");
  expect(bagua_async_average_create(a, 8, MPI_FLOAT, 5, MPI_COMM_NULL, &handle),
         BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  CHECK(handle == nullptr);
  expect(bagua_async_average_lock(nullptr), BAGUA_ERR_INVALID_ARGUMENT, "handle is NULL");
  expect(bagua_async_average_unlock(nullptr), BAGUA_ERR_INVALID_ARGUMENT, "handle is NULL");
  expect(bagua_async_average_abort(nullptr), BAGUA_ERR_INVALID_ARGUMENT, "handle is NULL");
  expect(bagua_async_average_resume(nullptr), BAGUA_ERR_INVALID_ARGUMENT, "handle is NULL");
  long long rounds = 0;
  expect(bagua_async_average_rounds(nullptr, &rounds), BAGUA_ERR_INVALID_ARGUMENT,
         "handle is NULL");
  REQUIRE(bagua_async_average_create(a, 8, MPI_FLOAT, 5, w, &handle) == BAGUA_SUCCESS);
  expect(bagua_async_average_rounds(handle, nullptr), BAGUA_ERR_INVALID_ARGUMENT, "rounds is NULL");
  CHECK(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
  CHECK(bagua_async_average_destroy(nullptr) == BAGUA_SUCCESS);
  CHECK(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
}
