// bagua_allreduce on every datatype, op, count and algorithm, against values
// computed in closed form from (rank, index).
#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "helpers.hpp"

using test::Type;

namespace {

// Small integers, exact in every type (bfloat16 holds integers up to 256).
double input(int rank, size_t i) { return double((rank * 7 + i) % 13) + 1.0; }

double expected(MPI_Op op, Type t, int n, size_t i) {
  double sum = 0, mx = input(0, i), mn = input(0, i);
  for (int r = 0; r < n; ++r) {
    sum += input(r, i);
    mx = std::max(mx, input(r, i));
    mn = std::min(mn, input(r, i));
  }
  if (op == MPI_SUM) return sum;
  if (op == MPI_MAX) return mx;
  if (op == MPI_MIN) return mn;
  // Average: the exact sum divided once, in float32 for half types.
  if (t == Type::f64) return sum / n;
  return test::TypedBuffer::round(t, double(float(sum) / float(n)));
}

const char *op_label(MPI_Op op) {
  return op == MPI_SUM ? "sum" : op == MPI_MAX ? "max" : op == MPI_MIN ? "min" : "avg";
}

// Runs one allreduce and returns the number of wrong elements on this rank.
size_t run_case(MPI_Comm comm, Type t, MPI_Op op, size_t count, bool in_place) {
  const int rank = test::world_rank(), n = test::world_size();
  test::TypedBuffer send(t, count), recv(t, count);
  test::TypedBuffer &input_buf = in_place ? recv : send;
  for (size_t i = 0; i < count; ++i) input_buf.set(i, input(rank, i));
  const int rc = bagua_allreduce(in_place ? MPI_IN_PLACE : send.data(), recv.data(), int(count),
                                 test::mpi_type(t), op, comm);
  INFO("rank " << rank << " error: " << bagua_last_error());
  REQUIRE(rc == BAGUA_SUCCESS);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += recv.get(i) != expected(op, t, n, i);
  return wrong;
}

}  // namespace

TEST_CASE("allreduce matches closed-form results", "[allreduce]") {
  const int n = test::world_size();
  const size_t counts[] = {0, 1, 7, size_t(std::max(n - 1, 0)), 100003};
  const Type types[] = {Type::f32, Type::f64, Type::f16, Type::bf16};
  const MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, BAGUA_AVG};
  // Small segments so the 100003-element case runs a multi-segment pipeline.
  for (const char *algo : {"ring", "rd"}) {
    test::ScopedComm comm({{"BAGUA_ALLREDUCE_ALGO", algo}, {"BAGUA_SEGMENT_BYTES", "16384"}});
    for (Type t : types)
      for (MPI_Op op : ops)
        for (size_t count : counts)
          for (bool in_place : {false, true}) {
            INFO(algo << " " << test::type_name(t) << " " << op_label(op) << " count " << count
                      << (in_place ? " in-place" : " out-of-place"));
            CHECK(run_case(comm.get(), t, op, count, in_place) == 0);
          }
  }
}

TEST_CASE("allreduce outputs are bit-identical across ranks", "[allreduce]") {
  // Non-integer inputs, so the summation order matters.
  const size_t count = 65537;
  for (const char *algo : {"ring", "rd"}) {
    test::ScopedComm comm({{"BAGUA_ALLREDUCE_ALGO", algo}, {"BAGUA_SEGMENT_BYTES", "4096"}});
    std::vector<float> data(count), root(count);
    for (size_t i = 0; i < count; ++i)
      data[i] = 1.0f / float(1 + test::world_rank() + i % 1000) + 1e-3f * float(i % 7);
    REQUIRE(bagua_allreduce(MPI_IN_PLACE, data.data(), int(count), MPI_FLOAT, MPI_SUM,
                            comm.get()) == BAGUA_SUCCESS);
    root = data;
    MPI_Bcast(root.data(), int(count), MPI_FLOAT, 0, MPI_COMM_WORLD);
    INFO(algo);
    CHECK(std::memcmp(root.data(), data.data(), count * sizeof(float)) == 0);
  }
}

TEST_CASE("BAGUA_AVG works with MPI's own reductions as a sum", "[allreduce]") {
  const uint16_t one = bagua::float_to_fp16(1.0f);
  uint16_t out = 0;
  REQUIRE(MPI_Allreduce(&one, &out, 1, BAGUA_FLOAT16, BAGUA_AVG, MPI_COMM_WORLD) == MPI_SUCCESS);
  CHECK(bagua::fp16_to_float(out) == float(test::world_size()));
}
