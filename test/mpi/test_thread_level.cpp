// MPI initialised below MPI_THREAD_MULTIPLE (this test has its own main, which
// asks for MPI_THREAD_FUNNELED). What include/bagua.h documents for that case,
// with BAGUA_TRANSPORT=mpi:
// - the calls that need MPI_THREAD_MULTIPLE (bagua_iallreduce,
//   bagua_iallreduce_q8, bagua_partial_reduce, bagua_partial_leave, and with
//   the mpi transport bagua_async_average_create and bagua_bucket_comm_create)
//   return BAGUA_ERR_THREAD_LEVEL on every rank, promptly, with a message
//   naming MPI_THREAD_MULTIPLE, and NULL outputs where documented;
// - the blocking calls (bagua_allreduce, bagua_decentralized_average) work,
//   also on a communicator where such a call was just refused.
// Exits 77 (SKIP) on every rank when MPI provides MPI_THREAD_MULTIPLE anyway.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace {

// A refused call returns at once; anything near BAGUA_TIMEOUT_MS (30 s in the
// test environment) means it waited for something.
constexpr double kPromptSeconds = 10.0;

// bagua_allreduce of element i = rank * 1000 + i equals the closed-form sum
// on every rank (exact in double: every value is an integer below 2^53).
bool allreduce_is_exact(MPI_Comm comm, int count, bool in_place) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<double> in(static_cast<size_t>(count)), out(static_cast<size_t>(count), -1.0);
  for (int i = 0; i < count; ++i) in[static_cast<size_t>(i)] = rank * 1000.0 + i;
  if (in_place) out = in;
  const int rc = bagua_allreduce(in_place ? MPI_IN_PLACE : in.data(), out.data(), count, MPI_DOUBLE,
                                 MPI_SUM, comm);
  INFO("count " << count << (in_place ? " in place" : "") << ": " << bagua_last_error());
  CHECK(rc == BAGUA_SUCCESS);
  // sum over r < size of (r * 1000 + i) = 1000 * size * (size - 1) / 2 + size * i
  int wrong = 0;
  for (int i = 0; i < count; ++i)
    if (out[static_cast<size_t>(i)] != 1000.0 * size * (size - 1) / 2 + double(size) * i) ++wrong;
  CHECK(wrong == 0);
  return test::all_ranks(rc == BAGUA_SUCCESS && wrong == 0, comm);
}

// Both sides of the ring threshold (64 KiB): recursive doubling and ring.
bool allreduce_works(MPI_Comm comm) {
  bool ok = true;
  for (int count : {1, 7, 20011})
    for (bool in_place : {false, true}) ok = allreduce_is_exact(comm, count, in_place) && ok;
  return ok;
}

// A call that needs MPI_THREAD_MULTIPLE: BAGUA_ERR_THREAD_LEVEL, promptly,
// with a message naming the thread level. Returns the call's status.
template <class Call>
int expect_thread_level(const char *what, Call call) {
  const auto start = std::chrono::steady_clock::now();
  const int rc = call();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string message = bagua_last_error();
  INFO(what << " (rank " << test::world_rank() << ", " << seconds << " s): " << message);
  CHECK(rc == BAGUA_ERR_THREAD_LEVEL);
  CHECK_FALSE(message.empty());
  CHECK(message.find("MPI_THREAD_MULTIPLE") != std::string::npos);
  CHECK(seconds < kPromptSeconds);
  return rc;
}

// On a fresh duplicate of MPI_COMM_WORLD: the refused call as the first bagua
// call on it, a plain allreduce, the refused call again (the communicator is
// now in use), and a plain allreduce again.
template <class Call>
void refused_then_blocking_works(const char *what, Call call) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  for (int round = 0; round < 2; ++round) {
    INFO(what << ", round " << round);
    expect_thread_level(what, [&] { return call(comm); });
    CHECK(allreduce_works(comm));
  }
  MPI_Comm_free(&comm);
}

// A request handle that is not MPI_REQUEST_NULL (an inactive persistent
// send), to see that a refused nonblocking call sets *request to
// MPI_REQUEST_NULL.
MPI_Request non_null_request() {
  static int unused = 0;
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Send_init(&unused, 1, MPI_INT, 0, 0, MPI_COMM_SELF, &request);
  return request;
}

// Starts a nonblocking call with `start` and checks the documented outputs of
// a refusal; completes the request if the call was not refused (so a failing
// check does not leave work in flight).
template <class Start>
int refused_nonblocking(Start start) {
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {};
  MPI_Request placeholder = non_null_request();
  MPI_Request request = placeholder;
  const int rc = start(in, out, &request);
  if (rc == BAGUA_SUCCESS) {
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  } else {
    CHECK(request == MPI_REQUEST_NULL);
  }
  MPI_Request_free(&placeholder);
  return rc;
}

}  // namespace

TEST_CASE("MPI runs below MPI_THREAD_MULTIPLE with the mpi transport", "[thread_level]") {
  int provided = MPI_THREAD_MULTIPLE;
  MPI_Query_thread(&provided);
  CHECK(provided < MPI_THREAD_MULTIPLE);
  const char *transport = std::getenv("BAGUA_TRANSPORT");
  INFO("BAGUA_TRANSPORT=" << (transport ? transport : "(unset: mpi)"));
  REQUIRE((transport == nullptr || std::string(transport) == "mpi"));
}

TEST_CASE("blocking bagua_allreduce gives the closed-form sum", "[thread_level]") {
  CHECK(allreduce_works(MPI_COMM_WORLD));
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  CHECK(allreduce_works(comm));
  MPI_Comm_free(&comm);
}

TEST_CASE("blocking bagua_decentralized_average works", "[thread_level]") {
  const int rank = test::world_rank(), size = test::world_size();
  const int count = 1001;
  std::vector<double> in(count), out(count, -1.0);
  for (int i = 0; i < count; ++i) in[static_cast<size_t>(i)] = rank * 1000.0 + i;
  SECTION("all: the exact average") {
    REQUIRE(bagua_decentralized_average(in.data(), out.data(), count, MPI_DOUBLE, BAGUA_PEER_ALL, 0,
                                        1, MPI_COMM_WORLD) == BAGUA_SUCCESS);
    int wrong = 0;
    for (int i = 0; i < count; ++i)
      if (out[static_cast<size_t>(i)] != (1000.0 * size * (size - 1) / 2 + double(size) * i) / size)
        ++wrong;
    CHECK(wrong == 0);
  }
  SECTION("ring: the average of the distinct ranks among r - 1, r, r + 1") {
    REQUIRE(bagua_decentralized_average(in.data(), out.data(), count, MPI_DOUBLE, BAGUA_PEER_RING,
                                        0, 1, MPI_COMM_WORLD) == BAGUA_SUCCESS);
    std::vector<int> ranks = {(rank + size - 1) % size, rank, (rank + 1) % size};
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    int wrong = 0;
    for (int i = 0; i < count; ++i) {
      double sum = 0;  // ascending rank order, divided once, as documented
      for (int r : ranks) sum += r * 1000.0 + i;
      if (out[static_cast<size_t>(i)] != sum / double(ranks.size())) ++wrong;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("bagua_iallreduce is refused with BAGUA_ERR_THREAD_LEVEL", "[thread_level]") {
  refused_then_blocking_works("bagua_iallreduce", [](MPI_Comm comm) {
    return refused_nonblocking([comm](float *in, float *out, MPI_Request *request) {
      return bagua_iallreduce(in, out, 8, MPI_FLOAT, MPI_SUM, comm, request);
    });
  });
}

TEST_CASE("bagua_iallreduce_q8 is refused with BAGUA_ERR_THREAD_LEVEL", "[thread_level]") {
  refused_then_blocking_works("bagua_iallreduce_q8", [](MPI_Comm comm) {
    return refused_nonblocking([comm](float *in, float *out, MPI_Request *request) {
      return bagua_iallreduce_q8(in, out, 8, MPI_FLOAT, MPI_SUM, comm, request);
    });
  });
}

TEST_CASE("bagua_partial_reduce and bagua_partial_leave are refused with BAGUA_ERR_THREAD_LEVEL",
          "[thread_level]") {
  refused_then_blocking_works("bagua_partial_reduce", [](MPI_Comm comm) {
    float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {};
    bagua_group_info info;
    return bagua_partial_reduce(in, out, 8, MPI_FLOAT, 0, comm, &info);
  });
  refused_then_blocking_works("bagua_partial_leave",
                              [](MPI_Comm comm) { return bagua_partial_leave(comm); });
}

TEST_CASE("bagua_async_average_create is refused with BAGUA_ERR_THREAD_LEVEL", "[thread_level]") {
  std::vector<float> weights(64, 1.0f);
  refused_then_blocking_works("bagua_async_average_create", [&weights](MPI_Comm comm) {
    static char placeholder = 0;
    bagua_async_t handle = reinterpret_cast<bagua_async_t>(&placeholder);
    const int rc = bagua_async_average_create(weights.data(), static_cast<int>(weights.size()),
                                              MPI_FLOAT, 10, comm, &handle);
    if (rc == BAGUA_SUCCESS) {
      bagua_async_average_destroy(&handle);  // stop its thread before going on
    } else {
      CHECK(handle == nullptr);
    }
    return rc;
  });
}

TEST_CASE("bagua_bucket_comm_create is refused with BAGUA_ERR_THREAD_LEVEL", "[thread_level]") {
  refused_then_blocking_works("bagua_bucket_comm_create", [](MPI_Comm comm) {
    static char placeholder = 0;
    bagua_bucket_comm_t bc = reinterpret_cast<bagua_bucket_comm_t>(&placeholder);
    const int rc = bagua_bucket_comm_create(comm, nullptr, &bc);
    if (rc == BAGUA_SUCCESS) {
      bagua_bucket_comm_destroy(&bc);  // join its workers before going on
    } else {
      CHECK(bc == nullptr);
    }
    return rc;
  });
}

// As test/mpi/mpi_main.cpp, but at MPI_THREAD_FUNNELED: every rank runs the
// same test cases in the same order, and the exit code is non-zero on every
// rank if any rank saw a failure.
int main(int argc, char **argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // Skip on every rank if any rank got MPI_THREAD_MULTIPLE: the refusals
  // cannot happen there, and passing would prove nothing.
  int multiple = provided >= MPI_THREAD_MULTIPLE ? 1 : 0, any_multiple = 0;
  MPI_Allreduce(&multiple, &any_multiple, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_multiple) {
    if (test::world_rank() == 0)
      std::printf(
          "MPI provided MPI_THREAD_MULTIPLE although MPI_THREAD_FUNNELED was requested: "
          "the thread-level errors cannot be tested, skipped\n");
    MPI_Finalize();
    return 77;
  }
  const int failed = Catch::Session().run(argc, argv);
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  bagua_finalize();
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
