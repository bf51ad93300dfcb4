// A communicator's lifetime leaves nothing behind: for every family, a few
// rounds of MPI_Comm_dup, one call (or a handle's life) and MPI_Comm_free
// bring the library's live objects (lib/base/live_objects.hpp: states,
// transports, MPI duplicates, progress engines) back to where they started;
// and a communicator's background features share one progress engine.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

#include "base/live_objects.hpp"
#include "helpers.hpp"

namespace {

using bagua::Live;

constexpr int kCount = 1024;
constexpr int kRounds = 3;

struct Counts {
  int64_t communicators, transports, duplicates, engines;
  static Counts now() {
    return {bagua::live_count(Live::communicator), bagua::live_count(Live::transport),
            bagua::live_count(Live::duplicate), bagua::live_count(Live::engine)};
  }
};

// Runs `use` on a fresh duplicate of MPI_COMM_WORLD kRounds times, freeing
// it each time; the live counts must end where they started.
void check_lifetime(const std::function<void(MPI_Comm, std::vector<float> &)> &use) {
  const Counts before = Counts::now();
  for (int round = 0; round < kRounds; ++round) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    std::vector<float> buf(kCount, 1.0f);
    use(comm, buf);
    MPI_Comm_free(&comm);
  }
  const Counts after = Counts::now();
  CHECK(after.communicators == before.communicators);
  CHECK(after.transports == before.transports);
  CHECK(after.duplicates == before.duplicates);
  CHECK(after.engines == before.engines);
}

// A bucketed communicator on comm of one tensor, `buf`, marked ready: its
// bucket is in flight.
bagua_bucket_comm_t start_one_bucket(MPI_Comm comm, std::vector<float> &buf) {
  bagua_bucket_comm_t bc = nullptr;
  REQUIRE(bagua_bucket_comm_create(comm, nullptr, &bc) == BAGUA_SUCCESS);
  int id = -1, buckets = 0;
  REQUIRE(bagua_bucket_comm_register(bc, buf.data(), int(buf.size()), MPI_FLOAT, &id) ==
          BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_finalize_registration(bc, nullptr, &buckets) == BAGUA_SUCCESS);
  REQUIRE(bagua_bucket_comm_mark_ready(bc, id) == BAGUA_SUCCESS);
  return bc;
}

}  // namespace

TEST_CASE("a communicator's lifetime leaves no live object behind", "[lifetime]") {
  SECTION("allreduce") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      REQUIRE(bagua_allreduce(MPI_IN_PLACE, buf.data(), kCount, MPI_FLOAT, MPI_SUM, comm) ==
              BAGUA_SUCCESS);
    });
  }
  SECTION("q8") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      REQUIRE(bagua_allreduce_q8(MPI_IN_PLACE, buf.data(), kCount, MPI_FLOAT, MPI_SUM, comm) ==
              BAGUA_SUCCESS);
    });
  }
  SECTION("iallreduce") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      MPI_Request req;
      REQUIRE(bagua_iallreduce(MPI_IN_PLACE, buf.data(), kCount, MPI_FLOAT, MPI_SUM, comm, &req) ==
              BAGUA_SUCCESS);
      REQUIRE(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
    });
  }
  SECTION("buckets") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      bagua_bucket_comm_t bc = start_one_bucket(comm, buf);
      REQUIRE(bagua_bucket_comm_wait_all(bc) == BAGUA_SUCCESS);
      bagua_bucket_comm_destroy(&bc);
    });
  }
  SECTION("async") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      bagua_async_t handle = nullptr;
      REQUIRE(bagua_async_average_create(buf.data(), kCount, MPI_FLOAT, 0, comm, &handle) ==
              BAGUA_SUCCESS);
      REQUIRE(bagua_async_average_destroy(&handle) == BAGUA_SUCCESS);
    });
  }
  SECTION("lowprec") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      bagua_lowprec_t state = nullptr;
      REQUIRE(bagua_lowprec_create(buf.data(), kCount, MPI_FLOAT, 1, comm, &state) ==
              BAGUA_SUCCESS);
      REQUIRE(bagua_lowprec_step(state, buf.data()) == BAGUA_SUCCESS);
      bagua_lowprec_destroy(&state);
    });
  }
  SECTION("partial") {
    check_lifetime([](MPI_Comm comm, std::vector<float> &buf) {
      REQUIRE(bagua_partial_reduce(MPI_IN_PLACE, buf.data(), kCount, MPI_FLOAT, test::world_size(),
                                   comm, nullptr) == BAGUA_SUCCESS);
      REQUIRE(bagua_partial_leave(comm) == BAGUA_SUCCESS);
    });
  }
}

TEST_CASE("a communicator's background features share one progress engine", "[lifetime][threads]") {
  const int64_t before = bagua::live_count(Live::engine);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int rank = test::world_rank();
  std::vector<float> nonblocking(kCount, 1.0f), bucketed(kCount, float(rank)),
      averaged(kCount, 1.0f), partial(kCount, 1.0f);
  // A nonblocking call, a bucketed communicator, an averager and partial
  // reduce's controller (on rank 0), all alive at once on comm.
  MPI_Request req;
  REQUIRE(bagua_iallreduce(MPI_IN_PLACE, nonblocking.data(), kCount, MPI_FLOAT, MPI_SUM, comm,
                           &req) == BAGUA_SUCCESS);
  bagua_bucket_comm_t bc = start_one_bucket(comm, bucketed);
  bagua_async_t averager = nullptr;
  REQUIRE(bagua_async_average_create(averaged.data(), kCount, MPI_FLOAT, 1, comm, &averager) ==
          BAGUA_SUCCESS);
  REQUIRE(bagua_partial_reduce(MPI_IN_PLACE, partial.data(), kCount, MPI_FLOAT, test::world_size(),
                               comm, nullptr) == BAGUA_SUCCESS);
  CHECK(bagua::live_count(Live::engine) == before + 1);
  REQUIRE(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
  REQUIRE(bagua_bucket_comm_wait_all(bc) == BAGUA_SUCCESS);
  const float n = float(test::world_size());
  CHECK(nonblocking[0] == n);
  CHECK(bucketed[0] == (n - 1) / 2);  // buckets average by default
  REQUIRE(bagua_partial_leave(comm) == BAGUA_SUCCESS);
  REQUIRE(bagua_async_average_destroy(&averager) == BAGUA_SUCCESS);
  bagua_bucket_comm_destroy(&bc);
  MPI_Comm_free(&comm);
  CHECK(bagua::live_count(Live::engine) == before);
}
