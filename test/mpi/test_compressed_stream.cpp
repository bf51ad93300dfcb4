// bagua_set_cuda_stream: available exactly in CUDA builds, bad input is a
// clear error, and host buffers are unaffected by a stream setting.
#include <catch2/catch.hpp>
#include <vector>

#include "helpers.hpp"
#include "mc/cuda_stream.hpp"

TEST_CASE("bagua_set_cuda_stream reports whether CUDA is built in", "[compressed][cuda]") {
  const int expected = BAGUA_HAVE_CUDA ? BAGUA_SUCCESS : BAGUA_ERR_NOT_AVAILABLE;
  CHECK(bagua_set_cuda_stream(MPI_COMM_WORLD, nullptr) == expected);
  if (!BAGUA_HAVE_CUDA)
    CHECK(std::string(bagua_last_error()).find("without CUDA") != std::string::npos);
}

TEST_CASE("bagua_set_cuda_stream rejects MPI_COMM_NULL", "[compressed][cuda]") {
  test::expect_error(bagua_set_cuda_stream(MPI_COMM_NULL, nullptr), BAGUA_ERR_INVALID_ARGUMENT,
                     "MPI_COMM_NULL");
}

TEST_CASE("host buffers ignore the stream setting", "[compressed][cuda]") {
  test::ScopedComm comm;
  bagua_set_cuda_stream(comm.get(), nullptr);
  const int n = test::world_size();
  std::vector<float> x(1000);
  // Every rank sends the same ramp; q8 error is at most about n (range 255 / 510 per quantization).
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 256);
  std::vector<float> y(x.size());
  REQUIRE(bagua_allreduce_q8(x.data(), y.data(), int(x.size()), MPI_FLOAT, MPI_SUM, comm.get()) ==
          BAGUA_SUCCESS);
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(float(n) * x[i]).margin(n * 1.1f));
}

TEST_CASE("a communicator's stream goes with it: a reused handle starts on the default stream",
          "[compressed][cuda]") {
  // White-box (lib/mc/cuda_stream.hpp): the stream is an attribute of the
  // communicator, so freeing it drops the setting even when MPI hands the
  // same handle value to the next communicator; a duplicate does not
  // inherit it. bagua never dereferences the stream here.
  int stream = 0;
  for (int i = 0; i < 8; ++i) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    CHECK(bagua::cuda_stream_of(comm) == nullptr);
    bagua::set_cuda_stream(comm, &stream);
    CHECK(bagua::cuda_stream_of(comm) == &stream);
    MPI_Comm copy;
    MPI_Comm_dup(comm, &copy);
    CHECK(bagua::cuda_stream_of(copy) == nullptr);
    MPI_Comm_free(&copy);
    MPI_Comm_free(&comm);
  }
}
