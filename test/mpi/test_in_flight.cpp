// Refusals at BAGUA_MAX_IN_FLIGHT (set small by the test's environment):
// ranks that start and wait for the same calls refuse the same ones, however
// the calls' completions interleave, and the communicator stays usable.
#include <mpi.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

int limit() {
  const char *v = std::getenv("BAGUA_MAX_IN_FLIGHT");
  return v != nullptr ? std::atoi(v) : 1024;
}

// MPI_Wait of each: MPICH 4.0's MPI_Waitall aborts (an assertion) on an
// array that mixes MPI_REQUEST_NULL (the refused calls) with generalized
// requests (bagua's) not yet complete.
void wait_each(std::vector<MPI_Request> &reqs) {
  for (MPI_Request &r : reqs) CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
}

// Starts `calls` calls before waiting for any, pausing `pause_ms` once the
// limit is reached (the calls running meanwhile complete, which must not
// matter); call k adds k on every rank. Returns whether every rank refused
// exactly the calls past the limit, and checks the accepted calls' sums.
bool post_then_wait(MPI_Comm comm, int calls, int pause_ms) {
  std::vector<float> values(size_t(calls), 0.0f);
  std::vector<MPI_Request> reqs(size_t(calls), MPI_REQUEST_NULL);
  bool as_expected = true;
  for (int k = 0; k < calls; ++k) {
    if (k == limit()) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    values[size_t(k)] = float(k);
    const int rc = bagua_iallreduce(MPI_IN_PLACE, &values[size_t(k)], 1, MPI_FLOAT, MPI_SUM, comm,
                                    &reqs[size_t(k)]);
    const bool accepted = rc == BAGUA_SUCCESS;
    if (accepted != (k < limit())) {
      UNSCOPED_INFO("call " << k << " of " << calls << ": " << bagua_last_error());
      as_expected = false;
    }
  }
  wait_each(reqs);
  for (int k = 0; k < std::min(calls, limit()); ++k)
    CHECK(values[size_t(k)] == float(k * test::world_size()));
  return test::all_ranks(as_expected);
}

// 100 calls in batches within the limit: all succeed with the right sums.
void hundred_more(MPI_Comm comm) {
  const int batch = std::min(limit(), 10);
  for (int first = 0; first < 100; first += batch) {
    std::vector<float> values(static_cast<size_t>(batch));
    std::vector<MPI_Request> reqs(size_t(batch), MPI_REQUEST_NULL);
    for (int k = 0; k < batch; ++k) {
      values[size_t(k)] = float(first + k);
      REQUIRE(bagua_iallreduce(MPI_IN_PLACE, &values[size_t(k)], 1, MPI_FLOAT, MPI_SUM, comm,
                               &reqs[size_t(k)]) == BAGUA_SUCCESS);
    }
    REQUIRE(MPI_Waitall(batch, reqs.data(), MPI_STATUSES_IGNORE) == MPI_SUCCESS);
    for (int k = 0; k < batch; ++k)
      CHECK(values[size_t(k)] == float((first + k) * test::world_size()));
  }
}

}  // namespace

TEST_CASE("calls in flight up to the limit take no thread each", "[iallreduce][threads]") {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  float warm = 1.0f;
  MPI_Request req = MPI_REQUEST_NULL;
  REQUIRE(bagua_iallreduce(MPI_IN_PLACE, &warm, 1, MPI_FLOAT, MPI_SUM, comm, &req) ==
          BAGUA_SUCCESS);
  REQUIRE(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  const long before = test::thread_count();
  // Rank 0 starts its calls while the other ranks hold at the barrier, so
  // every call of rank 0 is still in flight when it counts its threads.
  std::vector<float> values(size_t(limit()), 1.0f);
  std::vector<MPI_Request> reqs(size_t(limit()), MPI_REQUEST_NULL);
  const auto start_all = [&] {
    for (int k = 0; k < limit(); ++k)
      REQUIRE(bagua_iallreduce(MPI_IN_PLACE, &values[size_t(k)], 1, MPI_FLOAT, MPI_SUM, comm,
                               &reqs[size_t(k)]) == BAGUA_SUCCESS);
  };
  long during = before;
  if (test::world_rank() == 0) {
    start_all();
    during = test::thread_count();
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    start_all();
  }
  wait_each(reqs);
  for (float v : values) CHECK(v == float(test::world_size()));
  INFO(limit() << " calls in flight: " << before << " threads before, " << during << " during");
  CHECK(during <= before + 2);
  MPI_Comm_free(&comm);
}

TEST_CASE("refusals at the in-flight limit agree across ranks and leave the communicator usable",
          "[iallreduce]") {
  // A failed call reports through MPI_COMM_WORLD's handler (include/bagua.h).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  // Just past the limit, well past it, and far past it (the issue's
  // counts); then with the calls under the limit completing before more
  // are started.
  for (int pause_ms : {0, 100})
    for (int calls : {limit() + 1, limit() + 4, 2 * limit() + 3, 1100, 2100}) {
      INFO(calls << " calls before waiting, limit " << limit() << ", pause " << pause_ms << " ms");
      CHECK(post_then_wait(comm, calls, pause_ms));
      hundred_more(comm);
    }
  MPI_Comm_free(&comm);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}
