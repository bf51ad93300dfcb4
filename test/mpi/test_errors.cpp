// Bad input returns a clear error code and message, never a crash or a hang.
#include <catch2/catch.hpp>
#include <string>

#include "helpers.hpp"

TEST_CASE("argument errors are reported before any communication", "[errors]") {
  float a[8] = {}, b[8] = {};
  test::expect_error(bagua_allreduce(nullptr, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                     BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
  test::expect_error(bagua_allreduce(a, nullptr, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                     BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is NULL");
  test::expect_error(bagua_allreduce(a, b, -1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_allreduce(a, b, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  test::expect_error(bagua_allreduce(a, b, 8, MPI_FLOAT, MPI_PROD, MPI_COMM_WORLD),
                     BAGUA_ERR_UNSUPPORTED_OP, "op");
  test::expect_error(bagua_allreduce(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_NULL),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  test::expect_error(bagua_allreduce(a, a + 2, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                     BAGUA_ERR_INVALID_ARGUMENT, "overlap");
  auto *misaligned = reinterpret_cast<float *>(reinterpret_cast<char *>(b) + 1);
  test::expect_error(bagua_allreduce(a, misaligned, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                     BAGUA_ERR_INVALID_ARGUMENT, "aligned");
  // NULL buffers are fine when there is nothing to reduce.
  CHECK(bagua_allreduce(nullptr, nullptr, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == BAGUA_SUCCESS);
}

TEST_CASE("status codes have names", "[errors]") {
  for (int code = BAGUA_SUCCESS; code <= BAGUA_ERR_NOT_AVAILABLE; ++code)
    CHECK(std::string(bagua_error_string(code)) != "unknown status code");
  CHECK(std::string(bagua_error_string(999)) == "unknown status code");
  const std::string version = std::to_string(BAGUA_VERSION_MAJOR) + "." +
                              std::to_string(BAGUA_VERSION_MINOR) + "." +
                              std::to_string(BAGUA_VERSION_PATCH);
  CHECK(version == bagua_version_string());
}

TEST_CASE("a bad environment value is a clear error", "[errors]") {
  setenv("BAGUA_TIMEOUT_MS", "soon", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  float x = 1;
  test::expect_error(bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                     BAGUA_ERR_INVALID_ARGUMENT, "BAGUA_TIMEOUT_MS");
  unsetenv("BAGUA_TIMEOUT_MS");
  MPI_Comm_free(&comm);
}

TEST_CASE("one rank's bad setting fails the first call on every rank", "[errors]") {
  if (test::world_rank() == 0) setenv("BAGUA_SEGMENT_BYTES", "12", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  float x = 1;
  const int rc = bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm);
  test::expect_error(rc, BAGUA_ERR_INVALID_ARGUMENT,
                     test::world_rank() == 0 ? "BAGUA_SEGMENT_BYTES" : "another rank");
  unsetenv("BAGUA_SEGMENT_BYTES");
  MPI_Comm_free(&comm);
}

TEST_CASE("settings that differ across ranks are refused on every rank", "[errors]") {
  if (test::world_size() < 2) return;
  if (test::world_rank() == 1) setenv("BAGUA_SEGMENT_BYTES", "8192", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  float x = 1;
  test::expect_error(bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                     BAGUA_ERR_MISMATCH, "differ across ranks");
  unsetenv("BAGUA_SEGMENT_BYTES");
  MPI_Comm_free(&comm);
}

TEST_CASE("mismatched counts fail on every rank, then the communicator is broken", "[errors]") {
  if (test::world_size() < 2) return;
  test::ScopedComm comm({{"BAGUA_TIMEOUT_MS", "3000"}});
  std::vector<float> data(64, 1.0f);
  const int count = test::world_rank() == 0 ? 16 : 32;
  const int rc = bagua_allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, comm.get());
  INFO("rank " << test::world_rank() << ": " << bagua_last_error());
  CHECK((rc == BAGUA_ERR_MISMATCH || rc == BAGUA_ERR_TIMEOUT));
  test::expect_error(bagua_allreduce(MPI_IN_PLACE, data.data(), 16, MPI_FLOAT, MPI_SUM, comm.get()),
                     BAGUA_ERR_COMM_BROKEN, "earlier call failed");
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a peer that never calls makes the others time out", "[errors]") {
  if (test::world_size() < 2) return;
  test::ScopedComm comm({{"BAGUA_TIMEOUT_MS", "2000"}});
  std::vector<float> data(16, 1.0f);
  // The last rank disappears from this collective.
  if (test::world_rank() != test::world_size() - 1) {
    const int rc = bagua_allreduce(MPI_IN_PLACE, data.data(), 16, MPI_FLOAT, MPI_SUM, comm.get());
    test::expect_error(rc, BAGUA_ERR_TIMEOUT, "timed out");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
