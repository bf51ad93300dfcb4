// bagua_partial_reduce: group results against closed forms computed from the
// group info, info consistency across members (gathered with MPI), group
// formation under injected delays, connectivity within tau groups, early
// leavers, P = N against allreduce, the q8-compressed group average against
// its error bound, argument errors, and bagua_finalize on MPI_COMM_WORLD.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <string>
#include <thread>

#include "helpers.hpp"

using test::Type;

namespace {

constexpr int kMaxRanks = 8;

// Small integers: sums of a few are exact in every type.
double input(int rank, long long iteration, size_t i) {
  return double((rank * 5 + iteration * 3 + static_cast<long long>(i)) % 11) + 1.0;
}

// What one rank saw in one call, in a form MPI can gather.
struct Record {
  int rank = -1;
  int call = -1;
  long long group_id = -1;
  int size = 0;
  int bridging = 0;
  int members[kMaxRanks] = {};
  long long iterations[kMaxRanks] = {};
  double weights[kMaxRanks] = {};
};

Record record_of(int call, const bagua_group_info &info) {
  Record r;
  r.rank = test::world_rank();
  r.call = call;
  r.group_id = info.group_id;
  r.size = info.size;
  r.bridging = info.bridging;
  for (int i = 0; i < info.size && i < kMaxRanks; ++i) {
    r.members[i] = info.members[i];
    r.iterations[i] = info.iterations[i];
    r.weights[i] = info.weights[i];
  }
  return r;
}

// Every rank's records (each rank made `calls` calls).
std::vector<Record> gather(const std::vector<Record> &mine) {
  std::vector<Record> all(mine.size() * size_t(test::world_size()));
  MPI_Allgather(mine.data(), int(mine.size() * sizeof(Record)), MPI_BYTE, all.data(),
                int(mine.size() * sizeof(Record)), MPI_BYTE, MPI_COMM_WORLD);
  return all;
}

// The uniform average of the members' inputs, divided once in the type.
double uniform_expected(Type t, const bagua_group_info &info, size_t i) {
  double sum = 0;
  for (int m = 0; m < info.size; ++m) sum += input(info.members[m], info.iterations[m], i);
  if (t == Type::f64) return sum / info.size;
  return test::TypedBuffer::round(t, double(float(sum) / float(info.size)));
}

// One call with this rank's inputs for `call`; returns the wrong elements.
size_t call_and_check(MPI_Comm comm, Type t, size_t count, int group_size, int call,
                      bagua_group_info *info) {
  const int rank = test::world_rank();
  const bool in_place = call % 2 == 1;
  test::TypedBuffer send(t, count), recv(t, count);
  test::TypedBuffer &in = in_place ? recv : send;
  for (size_t i = 0; i < count; ++i) in.set(i, input(rank, call, i));
  const int rc = bagua_partial_reduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(),
                                      int(count), test::mpi_type(t), group_size, comm, info);
  INFO("rank " << rank << " call " << call << ": " << bagua_last_error());
  REQUIRE(rc == BAGUA_SUCCESS);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += recv.get(i) != uniform_expected(t, *info, i);
  return wrong;
}

bool same_group(const Record &a, const Record &b) {
  return a.size == b.size && a.bridging == b.bridging &&
         std::equal(a.members, a.members + a.size, b.members) &&
         std::equal(a.iterations, a.iterations + a.size, b.iterations) &&
         std::equal(a.weights, a.weights + a.size, b.weights);
}

// Records grouped by group id, checked for consistency: every member reports
// the same info, lists itself with its own call number, and every member of
// a group reported it.
std::map<long long, Record> check_consistent(const std::vector<Record> &all) {
  std::map<long long, Record> groups;
  std::map<long long, int> reports;
  for (const Record &r : all) {
    INFO("rank " << r.rank << " call " << r.call << " group " << r.group_id);
    const auto self = std::find(r.members, r.members + r.size, r.rank);
    REQUIRE(self != r.members + r.size);
    CHECK(r.iterations[self - r.members] == r.call);
    CHECK(std::is_sorted(r.members, r.members + r.size));
    auto [it, fresh] = groups.emplace(r.group_id, r);
    if (!fresh) CHECK(same_group(it->second, r));
    ++reports[r.group_id];
  }
  for (const auto &[id, g] : groups) CHECK(reports[id] == g.size);
  // Ids are the sequence 0, 1, ... with no gap.
  long long expect_id = 0;
  for (const auto &entry : groups) CHECK(entry.first == expect_id++);
  return groups;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("members receive exactly their group's average and agree on the info", "[partial]") {
  const int calls = 4;
  for (Type t : {Type::f32, Type::f64, Type::f16, Type::bf16})
    for (size_t count : {size_t(7), size_t(50000)}) {
      test::ScopedComm comm({{"BAGUA_SEGMENT_BYTES", "16384"}});
      std::vector<Record> mine;
      for (int call = 0; call < calls; ++call) {
        INFO(test::type_name(t) << " count " << count);
        bagua_group_info info;
        CHECK(call_and_check(comm.get(), t, count, 0, call, &info) == 0);
        CHECK(info.size <= (test::world_size() + 1) / 2);  // default P, no bridging needed
        mine.push_back(record_of(call, info));
      }
      const auto groups = check_consistent(gather(mine));
      for (const auto &[id, g] : groups)
        for (int m = 0; m < g.size; ++m) CHECK(g.weights[m] == 1.0 / g.size);
    }
}

TEST_CASE("staleness-aware weights follow 1 / (1 + staleness), normalised", "[partial]") {
  test::ScopedComm comm({{"BAGUA_PARTIAL_WEIGHTS", "staleness"}});
  const int rank = test::world_rank();
  const size_t count = 5;
  for (int call = 0; call < 6; ++call) {
    sleep_ms(3 * rank);  // later ranks fall behind
    std::vector<double> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = input(rank, call, i);
    bagua_group_info info;
    REQUIRE(bagua_partial_reduce(MPI_IN_PLACE, data.data(), int(count), MPI_DOUBLE, 2, comm.get(),
                                 &info) == BAGUA_SUCCESS);
    const long long newest = *std::max_element(info.iterations, info.iterations + info.size);
    double total = 0;
    for (int m = 0; m < info.size; ++m) total += 1.0 / double(1 + newest - info.iterations[m]);
    for (int m = 0; m < info.size; ++m) {
      CHECK(info.staleness[m] == newest - info.iterations[m]);
      CHECK(info.weights[m] == Approx(1.0 / double(1 + info.staleness[m]) / total));
    }
    for (size_t i = 0; i < count; ++i) {
      double expected = 0;
      for (int m = 0; m < info.size; ++m)
        expected += info.weights[m] * input(info.members[m], info.iterations[m], i);
      CHECK(data[i] == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("delayed ranks: fast ranks pair up, and tau forces a bridging group", "[partial]") {
  const int n = test::world_size(), rank = test::world_rank();
  if (n < 2) return;
  const int p = n / 2, tau = 3, calls = 8;
  // Groups close only at P (or as bridges): the deadline is far away.
  test::ScopedComm comm({{"BAGUA_PARTIAL_TAU", "3"},
                         {"BAGUA_PARTIAL_DEADLINE_MS", "100000"},
                         {"BAGUA_PARTIAL_DEADLINE_MAX_MS", "100000"}});
  const bool fast = rank < p;
  std::vector<Record> mine;
  bagua_group_info info;
  // Call 0 gathers everybody (P = n), so all start together and connected.
  CHECK(call_and_check(comm.get(), Type::f64, 3, n, 0, &info) == 0);
  CHECK(info.size == n);
  mine.push_back(record_of(0, info));
  for (int call = 1; call <= calls; ++call) {
    if (!fast) sleep_ms(40);
    CHECK(call_and_check(comm.get(), Type::f64, 3, p, call, &info) == 0);
    mine.push_back(record_of(call, info));
  }
  REQUIRE(bagua_partial_leave(comm.get()) == BAGUA_SUCCESS);
  const auto all = gather(mine);
  const auto groups = check_consistent(all);

  // Until the first rank's last group, every rank took part: replay the
  // controller's rule (a window of groups ends when the graph connects) and
  // check no window outgrows tau groups.
  long long bound = groups.rbegin()->first;
  for (int r = 0; r < n; ++r)
    bound = std::min(bound, all[size_t(r) * (calls + 1) + calls].group_id);
  std::vector<int> parent(static_cast<size_t>(n));
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x];
    return x;
  };
  std::iota(parent.begin(), parent.end(), 0);
  int window = 0;
  bool fast_group = false, bridged = false;
  for (const auto &[id, g] : groups) {
    const bool all_fast = std::all_of(g.members, g.members + g.size, [&](int m) { return m < p; });
    fast_group = fast_group || (all_fast && g.size == p);
    bridged = bridged || (g.bridging && !all_fast && g.members[0] < p);
    if (id > bound) continue;
    for (int m = 1; m < g.size; ++m) parent[find(g.members[m])] = find(g.members[0]);
    ++window;
    bool connected = true;
    for (int r = 1; r < n; ++r) connected = connected && find(r) == find(0);
    INFO("group " << id);
    if (connected) {
      std::iota(parent.begin(), parent.end(), 0);
      window = 0;
    } else {
      CHECK(window < tau);
    }
  }
  CHECK(fast_group);  // the fast ranks formed a group of P among themselves
  CHECK(bridged);     // and a bridge joined them with slow ranks
}

TEST_CASE("ranks leaving early never block the others", "[partial]") {
  const int n = test::world_size(), rank = test::world_rank();
  // P = n and a deadline far beyond the timeout: groups can only close
  // because the controller stops waiting for departed ranks.
  test::ScopedComm comm(
      {{"BAGUA_PARTIAL_DEADLINE_MS", "100000"}, {"BAGUA_PARTIAL_DEADLINE_MAX_MS", "100000"}});
  const int calls = 2 + rank;  // rank 0, the controller's rank, leaves first
  for (int call = 0; call < calls; ++call) {
    bagua_group_info info;
    CHECK(call_and_check(comm.get(), Type::f32, 9, n, call, &info) == 0);
    // Ranks r with 2 + r > call are still calling.
    CHECK(info.size == n - std::max(0, call - 1));
  }
  REQUIRE(bagua_partial_leave(comm.get()) == BAGUA_SUCCESS);
  test::expect_error(bagua_partial_leave(comm.get()), BAGUA_ERR_INVALID_ARGUMENT, "already left");
}

TEST_CASE("a rank that left takes part again with its next call", "[partial]") {
  const int n = test::world_size(), rank = test::world_rank();
  // P = n and no deadline within the test: a group closes only when every
  // rank taking part is ready.
  test::ScopedComm comm(
      {{"BAGUA_PARTIAL_DEADLINE_MS", "100000"}, {"BAGUA_PARTIAL_DEADLINE_MAX_MS", "100000"}});
  int call = 0;
  // Three rounds of: leave, a collective of the trainer's kind (every rank has
  // left, so no group may wait for a rank inside it), one call each with
  // P = 1 (it closes at once, so it cannot wait for a rank in the barrier
  // below), then after a barrier one call each with P = n. Each rank's first
  // call made it take part again, and its return means the controller knows,
  // so after the barrier every rank takes part and the group holds all n.
  for (int round = 0; round < 3; ++round) {
    REQUIRE(bagua_partial_leave(comm.get()) == BAGUA_SUCCESS);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm.get());
    CHECK(sum == n * (n - 1) / 2);
    bagua_group_info info{};
    CHECK(call_and_check(comm.get(), Type::f32, 33, 1, call++, &info) == 0);
    CHECK(info.size == 1);
    MPI_Barrier(comm.get());
    CHECK(call_and_check(comm.get(), Type::f32, 33, n, call++, &info) == 0);
    CHECK(info.size == n);
  }
}

TEST_CASE("a fixed-step loop without leave ends on every rank", "[partial]") {
  // Ranks make different numbers of calls and stop without
  // bagua_partial_leave, as a training loop's do when the fast ranks finish
  // first: every call still completes. A group that cannot fill closes at its
  // deadline; a bridging group (tau = 2 makes them frequent) whose components
  // never come closes at the longest deadline (200 ms here).
  const int rank = test::world_rank();
  test::ScopedComm comm({{"BAGUA_PARTIAL_DEADLINE_MAX_MS", "200"}, {"BAGUA_PARTIAL_TAU", "2"}});
  std::vector<float> data(33, 1.0f);
  int failed = 0;
  for (int call = 0; call < 4 + 3 * rank; ++call) {
    bagua_group_info info{};
    const int rc =
        bagua_partial_reduce(MPI_IN_PLACE, data.data(), 33, MPI_FLOAT, 2, comm.get(), &info);
    INFO("rank " << rank << " call " << call << ": " << bagua_last_error());
    CHECK(rc == BAGUA_SUCCESS);
    failed += rc != BAGUA_SUCCESS;
    // Every member averaged ones: the result stays one.
    failed += rc == BAGUA_SUCCESS && data[32] != 1.0f;
  }
  CHECK(failed == 0);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("P = N gives exactly allreduce's average", "[partial]") {
  const int n = test::world_size();
  test::ScopedComm comm(
      {{"BAGUA_PARTIAL_DEADLINE_MS", "100000"}, {"BAGUA_PARTIAL_DEADLINE_MAX_MS", "100000"}});
  for (size_t count : {size_t(5), size_t(100003)}) {
    std::vector<float> data(count), by_allreduce(count), by_partial(count);
    for (size_t i = 0; i < count; ++i)
      data[i] = 1.0f / float(1 + test::world_rank() + i % 1000) + 1e-3f * float(i % 7);
    REQUIRE(bagua_allreduce(data.data(), by_allreduce.data(), int(count), MPI_FLOAT, BAGUA_AVG,
                            comm.get()) == BAGUA_SUCCESS);
    bagua_group_info info;
    REQUIRE(bagua_partial_reduce(data.data(), by_partial.data(), int(count), MPI_FLOAT, n,
                                 comm.get(), &info) == BAGUA_SUCCESS);
    CHECK(info.size == n);
    CHECK(std::memcmp(by_allreduce.data(), by_partial.data(), count * sizeof(float)) == 0);
  }
}

TEST_CASE("a non-finite input affects its own call only: the next call is right", "[partial]") {
  const int n = test::world_size(), rank = test::world_rank();
  test::ScopedComm comm({{"BAGUA_PARTIAL_DEADLINE_MS", "100000"},
                         {"BAGUA_PARTIAL_DEADLINE_MAX_MS", "100000"},
                         {"BAGUA_PARTIAL_WEIGHTS", "staleness"}});
  const size_t count = 1000;
  std::vector<float> data(count, float(rank)), out(count), by_allreduce(count);
  // Partial reduce keeps no data across calls (the staleness weights come
  // from iteration counts), so the bad value reaches this call's result only.
  if (rank == n - 1) data[3] = NAN;
  REQUIRE(bagua_partial_reduce(data.data(), out.data(), int(count), MPI_FLOAT, n, comm.get(),
                               nullptr) == BAGUA_SUCCESS);
  CHECK(std::isnan(out[3]));
  data[3] = float(rank);
  REQUIRE(bagua_partial_reduce(data.data(), out.data(), int(count), MPI_FLOAT, n, comm.get(),
                               nullptr) == BAGUA_SUCCESS);
  REQUIRE(bagua_allreduce(data.data(), by_allreduce.data(), int(count), MPI_FLOAT, BAGUA_AVG,
                          comm.get()) == BAGUA_SUCCESS);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += !(std::fabs(out[i] - by_allreduce[i]) <= 1e-6f);
  CHECK(wrong == 0);
  REQUIRE(bagua_partial_leave(comm.get()) == BAGUA_SUCCESS);
}

namespace {

// Smooth non-integer inputs in [-3, 5], so q8 rounding really happens.
double smooth_input(int rank, long long iteration, size_t i) {
  return 1.0 + 4.0 * std::sin(0.01 * double(i) + 1.3 * rank + 0.7 * double(iteration));
}
constexpr double kSmoothRange = 8.0;

// The bound of the q8 group average: the contributions and the reduced chunk
// are each quantized once (a q8 step is at most range / 255, whatever the
// block), then the result is stored in the type.
double q8_bound(Type t, double expected) {
  const double storage = t == Type::bf16 ? 1.0 / 256 : t == Type::f16 ? 1.0 / 2048 : 1e-6;
  return 2 * kSmoothRange / 255 + storage * std::fabs(expected) + 1e-6;
}

}  // namespace

TEST_CASE("q8 group average: members agree bit for bit, within the q8 bound", "[partial]") {
  const int calls = 3;
  const size_t count = 3001;  // several blocks and segments, uneven chunks
  for (Type t : {Type::f32, Type::f16, Type::bf16}) {
    INFO(test::type_name(t));
    // P = N and no deadline: one group of every rank per call (a group of
    // one would be exact).
    test::ScopedComm comm({{"BAGUA_PARTIAL_COMPRESSION", "q8"},
                           {"BAGUA_CODEC_BLOCK", "256"},
                           {"BAGUA_SEGMENT_BYTES", "4096"},
                           {"BAGUA_PARTIAL_DEADLINE_MS", "100000"},
                           {"BAGUA_PARTIAL_DEADLINE_MAX_MS", "100000"}});
    const int rank = test::world_rank(), n = test::world_size();
    std::vector<Record> mine;
    std::vector<double> results;
    size_t outside = 0, inexact = 0;
    for (int call = 0; call < calls; ++call) {
      const bool in_place = call % 2 == 1;
      test::TypedBuffer send(t, count), recv(t, count);
      test::TypedBuffer &in = in_place ? recv : send;
      for (size_t i = 0; i < count; ++i) in.set(i, smooth_input(rank, call, i));
      bagua_group_info info;
      const int rc = bagua_partial_reduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(),
                                          int(count), test::mpi_type(t), n, comm.get(), &info);
      INFO("call " << call << ": " << bagua_last_error());
      REQUIRE(rc == BAGUA_SUCCESS);
      CHECK(info.size == n);
      mine.push_back(record_of(call, info));
      // Compare with the exact average of the members' stored inputs.
      for (size_t i = 0; i < count; ++i) {
        double sum = 0;
        for (int m = 0; m < info.size; ++m)
          sum += test::TypedBuffer::round(t, smooth_input(info.members[m], info.iterations[m], i));
        const double expected = sum / info.size, got = recv.get(i);
        outside += std::fabs(got - expected) > q8_bound(t, expected);
        inexact += got != test::TypedBuffer::round(t, expected);
        results.push_back(got);
      }
    }
    CHECK(outside == 0);
    if (n > 1) CHECK(inexact > 0);  // the compressed path ran, not the exact one
    const auto all = gather(mine);
    const auto groups = check_consistent(all);
    std::vector<double> all_results(results.size() * size_t(test::world_size()));
    MPI_Allgather(results.data(), int(results.size()), MPI_DOUBLE, all_results.data(),
                  int(results.size()), MPI_DOUBLE, MPI_COMM_WORLD);
    // Every member's result is bit-identical to the group's first reporter's.
    std::map<long long, const double *> first;
    for (size_t k = 0; k < all.size(); ++k) {
      const double *got = all_results.data() + k * count;
      auto [it, fresh] = first.emplace(all[k].group_id, got);
      INFO("group " << all[k].group_id << " rank " << all[k].rank);
      if (!fresh) CHECK(std::memcmp(it->second, got, count * sizeof(double)) == 0);
    }
    CHECK(groups.size() == first.size());
  }
}

TEST_CASE("q8 group average refuses double and staleness weights clearly", "[partial]") {
  double d[3] = {1, 2, 3};
  {
    test::ScopedComm comm({{"BAGUA_PARTIAL_COMPRESSION", "q8"}});
    test::expect_error(bagua_partial_reduce(MPI_IN_PLACE, d, 3, MPI_DOUBLE, 0, comm.get(), nullptr),
                       BAGUA_ERR_UNSUPPORTED_DATATYPE, "BAGUA_PARTIAL_COMPRESSION=q8");
    CHECK(std::string(bagua_last_error()).find("MPI_FLOAT") != std::string::npos);
  }
  test::ScopedComm comm(
      {{"BAGUA_PARTIAL_COMPRESSION", "q8"}, {"BAGUA_PARTIAL_WEIGHTS", "staleness"}});
  float x = 1;
  test::expect_error(bagua_partial_reduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, 0, comm.get(), nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "BAGUA_PARTIAL_WEIGHTS=uniform");
}

TEST_CASE("partial reduce rejects bad arguments with clear errors", "[partial]") {
  const int n = test::world_size();
  float a[4] = {}, b[4] = {};
  bagua_group_info info;
  test::expect_error(bagua_partial_reduce(a, b, 4, MPI_FLOAT, -1, MPI_COMM_WORLD, &info),
                     BAGUA_ERR_INVALID_ARGUMENT, "group_size -1");
  test::expect_error(bagua_partial_reduce(a, b, 4, MPI_FLOAT, n + 1, MPI_COMM_WORLD, &info),
                     BAGUA_ERR_INVALID_ARGUMENT, "group_size");
  test::expect_error(bagua_partial_reduce(nullptr, b, 4, MPI_FLOAT, 1, MPI_COMM_WORLD, &info),
                     BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
  test::expect_error(bagua_partial_reduce(a, nullptr, 4, MPI_FLOAT, 1, MPI_COMM_WORLD, &info),
                     BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is NULL");
  test::expect_error(bagua_partial_reduce(a, b, -1, MPI_FLOAT, 1, MPI_COMM_WORLD, &info),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_partial_reduce(a, b, 4, MPI_INT, 1, MPI_COMM_WORLD, &info),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  test::expect_error(bagua_partial_reduce(a, b, 4, MPI_FLOAT, 1, MPI_COMM_NULL, &info),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  test::expect_error(bagua_partial_leave(MPI_COMM_NULL), BAGUA_ERR_INVALID_ARGUMENT,
                     "MPI_COMM_NULL");
}

TEST_CASE("out-of-range partial options are clear errors", "[partial]") {
  const std::string n_text = std::to_string(test::world_size());
  const std::pair<const char *, std::string> bad[] = {
      {"BAGUA_PARTIAL_TAU", "-1"},
      {"BAGUA_PARTIAL_MIN_GROUP_SIZE", "0"},
      {"BAGUA_PARTIAL_DEADLINE_MIN_MS", "50"},  // above the 10 ms deadline
      {"BAGUA_PARTIAL_WEIGHTS", "newest"},
      {"BAGUA_PARTIAL_COMPRESSION", "q5"},  // no wire has that name
      {"BAGUA_PARTIAL_CONTROLLER", n_text},
      {"BAGUA_PARTIAL_GROUP_SIZE", std::to_string(test::world_size() + 1)},
  };
  for (const auto &[name, value] : bad) {
    INFO(name << "=" << value);
    setenv(name, value.c_str(), 1);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    float x = 1;
    test::expect_error(bagua_partial_reduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, 0, comm, nullptr),
                       BAGUA_ERR_INVALID_ARGUMENT, name);
    unsetenv(name);
    MPI_Comm_free(&comm);
  }
}

// On MPI_COMM_WORLD, which the program never frees: without bagua_finalize
// the controller would run until MPI_Finalize.
TEST_CASE("bagua_finalize leaves, joins the controller thread, and later calls start afresh",
          "[partial]") {
  const int n = test::world_size();
  bagua_group_info info;
  CHECK(call_and_check(MPI_COMM_WORLD, Type::f32, 5, n, 0, &info) == 0);
  const int with_controller = test::thread_count();
  // No bagua_partial_leave: bagua_finalize leaves on every rank, and the
  // controller rank (0, the default) waits for all of them.
  REQUIRE(bagua_finalize() == BAGUA_SUCCESS);
  if (test::world_rank() == 0) CHECK(test::thread_count() < with_controller);
  // A fresh state counts iterations from 0 again (call_and_check's expected
  // values use the members' iterations, so call 0 checks it), and the half
  // types are made again.
  CHECK(call_and_check(MPI_COMM_WORLD, Type::f16, 5, n, 0, &info) == 0);
  CHECK(info.size == n);
  REQUIRE(bagua_finalize() == BAGUA_SUCCESS);
  REQUIRE(bagua_finalize() == BAGUA_SUCCESS);
}
