// bagua_decentralized_average against a reference computed from every rank's
// input (gathered with MPI_Allgather), and the low-precision ring state: the
// replica invariant, the error bound of one step, convergence.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "helpers.hpp"

using test::Type;

namespace {

int mod(int x, int n) { return ((x % n) + n) % n; }

// The documented shift_one schedule (bagua.h, BAGUA_PEER_SHIFT_ONE).
int shift_one_peer(int rank, int n, int round) {
  if (n % 2 == 1) return mod(round - rank, n);
  const int half = n / 2, shift = round % half;
  return rank < half ? half + (rank + shift) % half : mod(rank - half - shift, half);
}

// The ranks averaged by `rank` in `round`, itself included, ascending.
std::vector<int> members(bagua_peer_mode mode, int rank, int n, int round) {
  std::set<int> m{rank};
  if (mode == BAGUA_PEER_ALL)
    for (int r = 0; r < n; ++r) m.insert(r);
  else if (mode == BAGUA_PEER_SHIFT_ONE)
    m.insert(shift_one_peer(rank, n, round));
  else
    m.insert({mod(rank - 1, n), mod(rank + 1, n)});
  return {m.begin(), m.end()};
}

const char *mode_name(bagua_peer_mode mode) {
  return mode == BAGUA_PEER_ALL ? "all" : mode == BAGUA_PEER_SHIFT_ONE ? "shift_one" : "ring";
}

// Small integers, exact in every type, different per rank, index and step.
double input(int rank, size_t i, int step) {
  return double((rank * 7 + i * 3 + step * 5) % 13) + 1;
}

// Every rank's buffer: element i of rank r at [r * count + i].
std::vector<double> gather_all(test::TypedBuffer &mine, Type t, size_t count) {
  const int n = test::world_size();
  test::TypedBuffer all(t, count * n);
  MPI_Allgather(mine.data(), int(count * test::type_size(t)), MPI_BYTE, all.data(),
                int(count * test::type_size(t)), MPI_BYTE, MPI_COMM_WORLD);
  std::vector<double> out(count * n);
  for (size_t k = 0; k < out.size(); ++k) out[k] = all.get(k);
  return out;
}

// The documented arithmetic: sum in ascending rank order in float32
// (float64 for double), divide by the number of members, round once.
double reference(const std::vector<double> &all, size_t count, size_t i, Type t,
                 const std::vector<int> &ranks) {
  if (t == Type::f64) {
    double sum = 0;
    for (int r : ranks) sum += all[r * count + i];
    return sum / double(ranks.size());
  }
  float sum = 0;
  for (int r : ranks) sum += float(all[r * count + i]);
  return test::TypedBuffer::round(t, double(sum / float(ranks.size())));
}

}  // namespace

TEST_CASE("decentralized average equals the reference for every mode and type", "[decentralized]") {
  const int rank = test::world_rank(), n = test::world_size();
  test::ScopedComm comm({{"BAGUA_SEGMENT_BYTES", "16384"}});
  const Type types[] = {Type::f32, Type::f64, Type::f16, Type::bf16};
  const size_t counts[] = {0, 1, 7, 20011};
  for (bagua_peer_mode mode : {BAGUA_PEER_ALL, BAGUA_PEER_SHIFT_ONE, BAGUA_PEER_RING})
    for (Type t : types)
      for (size_t count : counts)
        // n + 1 rounds cover the whole shift_one schedule; odd steps in place.
        for (int step = 0; step <= n; ++step) {
          const bool in_place = step % 2 == 1;
          test::TypedBuffer send(t, count), recv(t, count);
          test::TypedBuffer &in = in_place ? recv : send;
          for (size_t i = 0; i < count; ++i) in.set(i, input(rank, i, step));
          const std::vector<double> all = gather_all(in, t, count);
          const int rc =
              bagua_decentralized_average(in_place ? MPI_IN_PLACE : send.data(), recv.data(),
                                          int(count), test::mpi_type(t), mode, step, 1, comm.get());
          INFO(mode_name(mode) << " " << test::type_name(t) << " count " << count << " step "
                               << step << ": " << bagua_last_error());
          REQUIRE(rc == BAGUA_SUCCESS);
          const std::vector<int> ranks = members(mode, rank, n, step);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i)
            wrong += recv.get(i) != reference(all, count, i, t, ranks);
          CHECK(wrong == 0);
        }
}

TEST_CASE("shift_one pairs ranks as documented and every pair meets", "[decentralized]") {
  const int rank = test::world_rank(), n = test::world_size();
  // Rank r contributes 16 r, so the output 8 (r + p) names the partner p.
  std::vector<int> partners(n);
  std::set<std::pair<int, int>> met;
  for (int round = 0; round < n; ++round) {
    float x = float(16 * rank);
    REQUIRE(bagua_decentralized_average(MPI_IN_PLACE, &x, 1, MPI_FLOAT, BAGUA_PEER_SHIFT_ONE, round,
                                        1, MPI_COMM_WORLD) == BAGUA_SUCCESS);
    const int partner = int(x / 8) - rank;
    MPI_Allgather(&partner, 1, MPI_INT, partners.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int idle = 0;
    for (int r = 0; r < n; ++r) {
      INFO("round " << round << " rank " << r << " partner " << partners[r]);
      CHECK(partners[partners[r]] == r);  // a matching
      CHECK(partners[r] == shift_one_peer(r, n, round));
      idle += partners[r] == r;
      met.insert({std::min(r, partners[r]), std::max(r, partners[r])});
    }
    CHECK(idle == n % 2);  // as many pairs as possible
  }
  // Odd n: every pair within n rounds. Even n (reference schedule): every
  // lower-half rank meets every upper-half rank.
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b)
      if (n % 2 == 1 || (a < n / 2 && b >= n / 2)) CHECK(met.count({a, b}) == 1);
}

TEST_CASE("chained steps with a communication interval follow the reference", "[decentralized]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 513;
  const int interval = 3;
  for (bagua_peer_mode mode : {BAGUA_PEER_SHIFT_ONE, BAGUA_PEER_RING, BAGUA_PEER_ALL}) {
    // Every rank simulates every rank's weights: sim[r * count + i].
    std::vector<float> sim(count * n);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) sim[r * count + i] = 1.0f / float(1 + r + i);
    std::vector<float> x(sim.begin() + rank * count, sim.begin() + (rank + 1) * count);
    for (int step = 0; step < 4 * interval + 1; ++step) {
      // Local update, then the (possibly local-only) averaging step.
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) sim[r * count + i] -= 0.01f * float((r + i) % 5);
      for (size_t i = 0; i < count; ++i) x[i] -= 0.01f * float((rank + i) % 5);
      REQUIRE(bagua_decentralized_average(MPI_IN_PLACE, x.data(), int(count), MPI_FLOAT, mode, step,
                                          interval, MPI_COMM_WORLD) == BAGUA_SUCCESS);
      if (step % interval != 0 || mode == BAGUA_PEER_ALL) {
        if (mode == BAGUA_PEER_ALL && step % interval == 0) {
          // The exact average's summation order is the allreduce's: compare
          // with a tolerance and continue the simulation from the result.
          for (size_t i = 0; i < count; ++i) {
            double mean = 0;
            for (int r = 0; r < n; ++r) mean += sim[r * count + i];
            CHECK(std::fabs(x[i] - mean / n) <= 1e-5);
          }
          MPI_Allgather(x.data(), int(count), MPI_FLOAT, sim.data(), int(count), MPI_FLOAT,
                        MPI_COMM_WORLD);
        }
        continue;
      }
      std::vector<float> next(sim.size());
      for (int r = 0; r < n; ++r) {
        const std::vector<int> ranks = members(mode, r, n, step / interval);
        for (size_t i = 0; i < count; ++i) {
          float sum = 0;
          for (int m : ranks) sum += sim[m * count + i];
          next[r * count + i] = sum / float(ranks.size());
        }
      }
      sim = next;
      INFO(mode_name(mode) << " step " << step);
      CHECK(std::memcmp(x.data(), sim.data() + rank * count, count * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("local steps copy the input without communicating", "[decentralized]") {
  std::vector<double> in(9, 1.5 + test::world_rank()), out(9, 0);
  // Only rank 0 calls on a local step: if it communicated, it would hang.
  if (test::world_rank() == 0) {
    REQUIRE(bagua_decentralized_average(in.data(), out.data(), 9, MPI_DOUBLE, BAGUA_PEER_RING, 5, 2,
                                        MPI_COMM_WORLD) == BAGUA_SUCCESS);
    CHECK(out == in);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

namespace {

// Left and right neighbours' self replicas, fetched with MPI.
std::pair<std::vector<float>, std::vector<float>> neighbours_self(const float *self, size_t count) {
  const int rank = test::world_rank(), n = test::world_size();
  const int left = mod(rank - 1, n), right = mod(rank + 1, n);
  std::vector<float> from_left(count), from_right(count);
  MPI_Sendrecv(self, int(count), MPI_FLOAT, right, 1, from_left.data(), int(count), MPI_FLOAT, left,
               1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(self, int(count), MPI_FLOAT, left, 2, from_right.data(), int(count), MPI_FLOAT,
               right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return {from_left, from_right};
}

}  // namespace

TEST_CASE("low-precision replicas stay bit-identical to the neighbours' weights",
          "[decentralized][lowprec]") {
  const int rank = test::world_rank();
  const size_t count = 10007;
  for (Type t : {Type::f32, Type::f16, Type::bf16})
    for (int interval : {1, 3}) {
      test::TypedBuffer x(t, count);
      for (size_t i = 0; i < count; ++i) x.set(i, std::sin(double(i + 31 * rank)));
      bagua_lowprec_t state = nullptr;
      REQUIRE(bagua_lowprec_create(x.data(), int(count), test::mpi_type(t), interval,
                                   MPI_COMM_WORLD, &state) == BAGUA_SUCCESS);
      // Many steps, each after a rank-dependent local update.
      for (int step = 0; step < 40; ++step) {
        for (size_t i = 0; i < count; ++i)
          x.set(i, x.get(i) - 0.01 * std::cos(double(i * (rank + 1) + step)));
        INFO(bagua_last_error());
        REQUIRE(bagua_lowprec_step(state, x.data()) == BAGUA_SUCCESS);
      }
      const float *self = nullptr, *left = nullptr, *right = nullptr;
      REQUIRE(bagua_lowprec_replicas(state, &self, &left, &right) == BAGUA_SUCCESS);
      auto [from_left, from_right] = neighbours_self(self, count);
      INFO(test::type_name(t) << " interval " << interval);
      CHECK(std::memcmp(left, from_left.data(), count * sizeof(float)) == 0);
      CHECK(std::memcmp(right, from_right.data(), count * sizeof(float)) == 0);
      // After a communicating step the weights are w rounded to the type
      // (the last step, 39, communicates for both intervals).
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += x.get(i) != test::TypedBuffer::round(t, self[i]);
      CHECK(wrong == 0);
      CHECK(bagua_lowprec_destroy(&state) == BAGUA_SUCCESS);
      CHECK(state == nullptr);
    }
}

TEST_CASE("one low-precision step is within the q8 bound of the exact ring average",
          "[decentralized][lowprec]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 50000;
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) x[i] = float(std::sin(0.001 * double(i) + rank) * 3.0);
  std::vector<float> all(count * n);
  MPI_Allgather(x.data(), int(count), MPI_FLOAT, all.data(), int(count), MPI_FLOAT, MPI_COMM_WORLD);
  bagua_lowprec_t state = nullptr;
  REQUIRE(bagua_lowprec_create(x.data(), int(count), MPI_FLOAT, 1, MPI_COMM_WORLD, &state) ==
          BAGUA_SUCCESS);
  REQUIRE(bagua_lowprec_step(state, x.data()) == BAGUA_SUCCESS);
  bagua_lowprec_destroy(&state);
  // Exact ring average and the range of the difference the step quantizes.
  const std::vector<int> ranks = members(BAGUA_PEER_RING, rank, n, 0);
  std::vector<double> exact(count);
  double lo = 0, hi = 0, largest = 0;
  for (size_t i = 0; i < count; ++i) {
    for (int r : ranks) exact[i] += all[r * count + i];
    exact[i] /= double(ranks.size());
    const double diff = exact[i] - all[rank * count + i];
    lo = std::min(lo, diff);
    hi = std::max(hi, diff);
    largest = std::max(largest, std::fabs(exact[i]));
  }
  const double bound = (hi - lo) / 510 + 1e-6 * largest;
  double worst = 0;
  for (size_t i = 0; i < count; ++i) worst = std::max(worst, std::fabs(x[i] - exact[i]));
  INFO("worst error " << worst << " bound " << bound);
  CHECK(worst <= bound);
}

TEST_CASE("low-precision steps converge to the common mean", "[decentralized][lowprec]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 4096;
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) x[i] = float(rank) + float(i % 17) * 0.25f;
  bagua_lowprec_t state = nullptr;
  REQUIRE(bagua_lowprec_create(x.data(), int(count), MPI_FLOAT, 1, MPI_COMM_WORLD, &state) ==
          BAGUA_SUCCESS);
  for (int step = 0; step < 100; ++step)
    REQUIRE(bagua_lowprec_step(state, x.data()) == BAGUA_SUCCESS);
  bagua_lowprec_destroy(&state);
  // Initial range across ranks is n - 1; the mean of element i is
  // (n - 1) / 2 + (i % 17) / 4.
  double worst = 0;
  for (size_t i = 0; i < count; ++i)
    worst = std::max(worst, std::fabs(x[i] - ((n - 1) / 2.0 + float(i % 17) * 0.25)));
  INFO("largest distance from the mean " << worst);
  CHECK(worst <= 1e-2 * std::max(n - 1, 1));
}

namespace {

// The state's replicas (self, left, right), copied.
std::vector<float> replicas_of(bagua_lowprec_t state, size_t count) {
  const float *parts[3] = {};
  REQUIRE(bagua_lowprec_replicas(state, &parts[0], &parts[1], &parts[2]) == BAGUA_SUCCESS);
  std::vector<float> out;
  for (const float *p : parts) out.insert(out.end(), p, p + count);
  return out;
}

}  // namespace

TEST_CASE("a non-finite input is refused on every rank and leaves the replicas unchanged",
          "[decentralized][lowprec]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 4096;
  for (float bad : {NAN, INFINITY}) {
    // The same steps on two states, one of which also sees the refused step.
    std::vector<float> x(count), ref(count);
    for (size_t i = 0; i < count; ++i) x[i] = ref[i] = float(rank) + 0.01f * float(i % 13);
    bagua_lowprec_t state = nullptr, clean = nullptr;
    REQUIRE(bagua_lowprec_create(x.data(), int(count), MPI_FLOAT, 1, MPI_COMM_WORLD, &state) ==
            BAGUA_SUCCESS);
    REQUIRE(bagua_lowprec_create(ref.data(), int(count), MPI_FLOAT, 1, MPI_COMM_WORLD, &clean) ==
            BAGUA_SUCCESS);
    REQUIRE(bagua_lowprec_step(state, x.data()) == BAGUA_SUCCESS);
    REQUIRE(bagua_lowprec_step(clean, ref.data()) == BAGUA_SUCCESS);
    const std::vector<float> before = replicas_of(state, count);
    // The last rank's input holds one bad value; every rank refuses.
    std::vector<float> poisoned = x;
    if (rank == n - 1) poisoned[count / 2] = bad;
    test::expect_error(bagua_lowprec_step(state, poisoned.data()), BAGUA_ERR_INVALID_ARGUMENT,
                       rank == n - 1 ? "on this rank" : "on another rank");
    CHECK(replicas_of(state, count) == before);
    // The next finite step is the one the clean state takes.
    for (size_t i = 0; i < count; ++i) x[i] = ref[i] = 0.5f;
    REQUIRE(bagua_lowprec_step(state, x.data()) == BAGUA_SUCCESS);
    REQUIRE(bagua_lowprec_step(clean, ref.data()) == BAGUA_SUCCESS);
    CHECK(x == ref);
    CHECK(replicas_of(state, count) == replicas_of(clean, count));
    CHECK(std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); }));
    bagua_lowprec_destroy(&state);
    bagua_lowprec_destroy(&clean);
    // Nor is a state made from non-finite weights.
    test::expect_error(
        bagua_lowprec_create(poisoned.data(), int(count), MPI_FLOAT, 1, MPI_COMM_WORLD, &state),
        BAGUA_ERR_INVALID_ARGUMENT, "NaN or an infinity");
    CHECK(state == nullptr);
  }
}

TEST_CASE("decentralized calls reject bad arguments clearly", "[decentralized][errors]") {
  float a[8] = {}, b[8] = {};
  auto expect = [](int rc, int code, const char *words) {
    INFO("message: " << bagua_last_error());
    CHECK(rc == code);
    CHECK(std::string(bagua_last_error()).find(words) != std::string::npos);
  };
  const auto shift = BAGUA_PEER_SHIFT_ONE;
  const MPI_Comm w = MPI_COMM_WORLD;
  expect(bagua_decentralized_average(nullptr, b, 8, MPI_FLOAT, shift, 0, 1, w),
         BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
  expect(bagua_decentralized_average(a, nullptr, 8, MPI_FLOAT, shift, 0, 1, w),
         BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is NULL");
  expect(bagua_decentralized_average(a, b, -1, MPI_FLOAT, shift, 0, 1, w),
         BAGUA_ERR_INVALID_ARGUMENT, "negative");
  expect(bagua_decentralized_average(a, b, 8, MPI_INT, shift, 0, 1, w),
         BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  expect(bagua_decentralized_average(a, b, 8, MPI_FLOAT, bagua_peer_mode(7), 0, 1, w),
         BAGUA_ERR_INVALID_ARGUMENT, "mode 7");
  expect(bagua_decentralized_average(a, b, 8, MPI_FLOAT, shift, -2, 1, w),
         BAGUA_ERR_INVALID_ARGUMENT, "step -2");
  expect(bagua_decentralized_average(a, b, 8, MPI_FLOAT, shift, 0, 0, w),
         BAGUA_ERR_INVALID_ARGUMENT, "interval 0");
  expect(bagua_decentralized_average(a, b, 8, MPI_FLOAT, shift, 0, 1, MPI_COMM_NULL),
         BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  expect(bagua_decentralized_average(a, a + 2, 4, MPI_FLOAT, shift, 0, 1, w),
         BAGUA_ERR_INVALID_ARGUMENT, "overlap");

  bagua_lowprec_t state = nullptr;
  expect(bagua_lowprec_create(a, 8, MPI_FLOAT, 1, w, nullptr), BAGUA_ERR_INVALID_ARGUMENT,
         "state is NULL");
  expect(bagua_lowprec_create(nullptr, 8, MPI_FLOAT, 1, w, &state), BAGUA_ERR_INVALID_ARGUMENT,
         "buf is NULL");
  expect(bagua_lowprec_create(a, -3, MPI_FLOAT, 1, w, &state), BAGUA_ERR_INVALID_ARGUMENT,
         "negative");
  expect(bagua_lowprec_create(a, 4, MPI_DOUBLE, 1, w, &state), BAGUA_ERR_UNSUPPORTED_DATATYPE,
         "MPI_DOUBLE");
  expect(bagua_lowprec_create(a, 8, MPI_INT, 1, w, &state), BAGUA_ERR_UNSUPPORTED_DATATYPE,
         "datatype");
  expect(bagua_lowprec_create(a, 8, MPI_FLOAT, 0, w, &state), BAGUA_ERR_INVALID_ARGUMENT,
         "interval 0");
  expect(bagua_lowprec_create(a, 8, MPI_FLOAT, 1, MPI_COMM_NULL, &state),
         BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  CHECK(state == nullptr);
  expect(bagua_lowprec_step(nullptr, a), BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  expect(bagua_lowprec_replicas(nullptr, nullptr, nullptr, nullptr), BAGUA_ERR_INVALID_ARGUMENT,
         "state is NULL");
  REQUIRE(bagua_lowprec_create(a, 8, MPI_FLOAT, 1, w, &state) == BAGUA_SUCCESS);
  expect(bagua_lowprec_step(state, nullptr), BAGUA_ERR_INVALID_ARGUMENT, "buf is NULL");
  CHECK(bagua_lowprec_destroy(&state) == BAGUA_SUCCESS);
  CHECK(bagua_lowprec_destroy(&state) == BAGUA_SUCCESS);
  CHECK(bagua_lowprec_destroy(nullptr) == BAGUA_SUCCESS);
}
