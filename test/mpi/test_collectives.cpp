// The data-movement collectives and point-to-point messages against MPI's own
// calls on the same inputs, over the real transports; bad arguments; the
// algorithm names and bagua_allreduce_alg.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace {

// Bytes of rank r's input: a different pattern per rank and position.
std::vector<unsigned char> input(int r, size_t bytes, int salt = 0) {
  std::vector<unsigned char> v(bytes);
  for (size_t k = 0; k < bytes; ++k) v[k] = static_cast<unsigned char>(r * 37 + k * 5 + salt);
  return v;
}

int type_bytes(MPI_Datatype t) {
  int size = 0;
  MPI_Type_size(t, &size);
  return size;
}

// The datatypes of the comparisons: 1, 2, 4 and 8 bytes, bagua's and MPI's.
const MPI_Datatype *types() {
  static MPI_Datatype list[4];
  list[0] = MPI_CHAR;
  list[1] = BAGUA_FLOAT16;
  list[2] = MPI_INT;
  list[3] = MPI_DOUBLE;
  return list;
}

struct Shape {
  MPI_Datatype type;
  int count;
  size_t block() const { return size_t(count) * size_t(type_bytes(type)); }
};

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (int i = 0; i < 4; ++i)
    for (int count : {0, 1, 1000}) out.push_back({types()[i], count});
  return out;
}

}  // namespace

TEST_CASE("bcast, gather, scatter at every root equal MPI's", "[collectives]") {
  test::ScopedComm comm;
  const int n = test::world_size(), r = test::world_rank();
  for (const Shape &s : shapes())
    for (int root = 0; root < n; ++root) {
      INFO("count " << s.count << " x " << type_bytes(s.type) << " bytes, root " << root);
      const size_t b = s.block();
      std::vector<unsigned char> mine = input(r, b), want = mine, got = mine;
      MPI_Bcast(want.data(), s.count, s.type, root, MPI_COMM_WORLD);
      REQUIRE(bagua_bcast(got.data(), s.count, s.type, root, comm.get()) == BAGUA_SUCCESS);
      CHECK(got == want);
      std::vector<unsigned char> all_want(b * n), all_got(b * n, 0);
      MPI_Gather(mine.data(), s.count, s.type, all_want.data(), s.count, s.type, root,
                 MPI_COMM_WORLD);
      REQUIRE(bagua_gather(mine.data(), s.count, s.type, all_got.data(), s.count, s.type, root,
                           comm.get()) == BAGUA_SUCCESS);
      if (r == root) CHECK(all_got == all_want);
      // In place at root: its block is already in recvbuf. The other ranks'
      // receive arguments are not significant.
      std::vector<unsigned char> in_place(b * n, 0);
      if (b > 0) std::memcpy(in_place.data() + b * r, mine.data(), b);
      const bool at_root = r == root;
      REQUIRE(bagua_gather(at_root ? MPI_IN_PLACE : mine.data(), s.count, s.type,
                           at_root ? in_place.data() : nullptr, at_root ? s.count : -1,
                           at_root ? s.type : MPI_DATATYPE_NULL, root,
                           comm.get()) == BAGUA_SUCCESS);
      if (r == root) CHECK(in_place == all_want);
      const std::vector<unsigned char> blocks = input(r, b * n, 1);
      std::vector<unsigned char> part_want(b), part_got(b);
      MPI_Scatter(blocks.data(), s.count, s.type, part_want.data(), s.count, s.type, root,
                  MPI_COMM_WORLD);
      REQUIRE(bagua_scatter(blocks.data(), s.count, s.type, part_got.data(), s.count, s.type, root,
                            comm.get()) == BAGUA_SUCCESS);
      CHECK(part_got == part_want);
      std::vector<unsigned char> kept = blocks;
      // Likewise the other ranks' send arguments.
      REQUIRE(bagua_scatter(at_root ? kept.data() : nullptr, at_root ? s.count : -1,
                            at_root ? s.type : MPI_DATATYPE_NULL,
                            at_root ? MPI_IN_PLACE : part_got.data(), s.count, s.type, root,
                            comm.get()) == BAGUA_SUCCESS);
      CHECK(part_got == part_want);
      CHECK(kept == blocks);
    }
}

TEST_CASE("allgather, alltoall, barrier equal MPI's", "[collectives]") {
  test::ScopedComm comm;
  const int n = test::world_size(), r = test::world_rank();
  for (const Shape &s : shapes()) {
    INFO("count " << s.count << " x " << type_bytes(s.type) << " bytes");
    const size_t b = s.block();
    const std::vector<unsigned char> mine = input(r, b);
    std::vector<unsigned char> want(b * n), got(b * n, 0), in_place(b * n, 0);
    MPI_Allgather(mine.data(), s.count, s.type, want.data(), s.count, s.type, MPI_COMM_WORLD);
    REQUIRE(bagua_allgather(mine.data(), s.count, s.type, got.data(), s.count, s.type,
                            comm.get()) == BAGUA_SUCCESS);
    CHECK(got == want);
    if (b > 0) std::memcpy(in_place.data() + b * r, mine.data(), b);
    REQUIRE(bagua_allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place.data(), s.count, s.type,
                            comm.get()) == BAGUA_SUCCESS);
    CHECK(in_place == want);
    const std::vector<unsigned char> blocks = input(r, b * n, 3);
    MPI_Alltoall(blocks.data(), s.count, s.type, want.data(), s.count, s.type, MPI_COMM_WORLD);
    REQUIRE(bagua_alltoall(blocks.data(), s.count, s.type, got.data(), s.count, s.type,
                           comm.get()) == BAGUA_SUCCESS);
    CHECK(got == want);
    in_place = blocks;
    REQUIRE(bagua_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place.data(), s.count, s.type,
                           comm.get()) == BAGUA_SUCCESS);
    CHECK(in_place == want);
  }
  CHECK(bagua_barrier(comm.get()) == BAGUA_SUCCESS);
}

TEST_CASE("reduce_scatter_block equals MPI's for every type and op", "[collectives]") {
  test::ScopedComm comm;
  const int n = test::world_size(), r = test::world_rank();
  const std::pair<MPI_Op, MPI_Op> ops[] = {{MPI_SUM, MPI_SUM},
                                           {MPI_MAX, MPI_MAX},
                                           {MPI_MIN, MPI_MIN},
                                           {MPI_PROD, MPI_PROD},
                                           {BAGUA_AVG, MPI_SUM}};
  for (test::Type t : {test::Type::f32, test::Type::f64, test::Type::f16, test::Type::bf16})
    for (auto [op, mpi_op] : ops)
      for (int count : {0, 1, 777}) {
        INFO(test::type_name(t) << " count " << count);
        const size_t total = size_t(count) * n;
        test::TypedBuffer in(t, total), got(t, count), both(t, total);
        // Small integers (1, -1, 2 for products): every partial result is
        // exact in every type. MPI's
        // reference runs in double (MPI reduces no half types); the average
        // is its sum over n, divided as bagua documents.
        std::vector<double> in_double(total), want(count);
        for (size_t i = 0; i < total; ++i) {
          const double factors[] = {1, -1, 2};
          in_double[i] = op == MPI_PROD ? factors[(r + i) % 3] : double((r * 7 + i * 3) % 11) - 5;
          in.set(i, in_double[i]);
          both.set(i, in_double[i]);
        }
        MPI_Reduce_scatter_block(in_double.data(), want.data(), count, MPI_DOUBLE, mpi_op,
                                 MPI_COMM_WORLD);
        if (op == BAGUA_AVG)
          for (double &w : want) w = t == test::Type::f64 ? w / n : double(float(w) / float(n));
        REQUIRE(bagua_reduce_scatter_block(in.data(), got.data(), count, test::mpi_type(t), op,
                                           comm.get()) == BAGUA_SUCCESS);
        REQUIRE(bagua_reduce_scatter_block(MPI_IN_PLACE, both.data(), count, test::mpi_type(t), op,
                                           comm.get()) == BAGUA_SUCCESS);
        for (int i = 0; i < count; ++i) {
          CHECK(got.get(i) == test::TypedBuffer::round(t, want[i]));
          CHECK(both.get(i) == test::TypedBuffer::round(t, want[i]));
        }
      }
}

TEST_CASE("send and recv: user tags in MPI's matching order, own tag space", "[collectives]") {
  test::ScopedComm comm;
  const int n = test::world_size(), r = test::world_rank();
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const std::vector<unsigned char> a = input(r, 5), big = input(r, 100000, 2);
  std::vector<unsigned char> got_a(5), got_big(100000);
  // Each rank sends in one phase and receives in the other (blocking, as
  // MPI_Send): even ranks send first. Tag 7 then tag 2 are sent; tag 2 is
  // received first.
  for (int phase = 0; phase < 2; ++phase) {
    if ((r + phase) % 2 == 0) {
      CHECK(bagua_send(a.data(), 5, MPI_BYTE, right, 7, comm.get()) == BAGUA_SUCCESS);
      CHECK(bagua_send(big.data(), 25000, MPI_INT, right, 2, comm.get()) == BAGUA_SUCCESS);
    } else {
      CHECK(bagua_recv(got_big.data(), 25000, MPI_INT, left, 2, comm.get()) == BAGUA_SUCCESS);
      CHECK(bagua_recv(got_a.data(), 5, MPI_BYTE, left, 7, comm.get()) == BAGUA_SUCCESS);
      CHECK(got_a == input(left, 5));
      CHECK(got_big == input(left, 100000, 2));
    }
  }
  // A collective in between matches none of the messages' tags.
  float one = 1;
  CHECK(bagua_allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, comm.get()) == BAGUA_SUCCESS);
  CHECK(one == float(n));
}

TEST_CASE("collectives reject bad arguments naming the entry point", "[collectives]") {
  test::ScopedComm comm;
  const MPI_Comm c = comm.get();
  const int n = test::world_size(), r = test::world_rank();
  std::vector<int> buf(8 * n);
  test::expect_error(bagua_bcast(nullptr, 4, MPI_INT, 0, c), BAGUA_ERR_INVALID_ARGUMENT,
                     "bagua_bcast: buf is NULL");
  test::expect_error(bagua_bcast(buf.data(), 4, MPI_INT, n, c), BAGUA_ERR_INVALID_ARGUMENT, "root");
  test::expect_error(bagua_bcast(buf.data(), -1, MPI_INT, 0, c), BAGUA_ERR_INVALID_ARGUMENT,
                     "negative");
  MPI_Datatype strided;
  MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
  MPI_Type_commit(&strided);
  test::expect_error(bagua_bcast(buf.data(), 1, strided, 0, c), BAGUA_ERR_INVALID_ARGUMENT,
                     "contiguous predefined");
  MPI_Type_free(&strided);
  test::expect_error(bagua_allgather(buf.data(), 2, MPI_INT, buf.data() + 2 * n, 1, MPI_INT, c),
                     BAGUA_ERR_INVALID_ARGUMENT, "must be equal");
  test::expect_error(bagua_allgather(buf.data(), 1, MPI_INT, buf.data(), 1, MPI_INT, c),
                     BAGUA_ERR_INVALID_ARGUMENT, "overlap");
  test::expect_error(bagua_scatter(buf.data(), 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, -1, c),
                     BAGUA_ERR_INVALID_ARGUMENT, "root -1");
  test::expect_error(bagua_alltoall(buf.data(), 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, c),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_IN_PLACE is not allowed");
  test::expect_error(bagua_reduce_scatter_block(buf.data(), buf.data() + n, 1, MPI_INT, MPI_SUM, c),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "bagua_reduce_scatter_block");
  test::expect_error(bagua_send(buf.data(), 1, MPI_INT, r, 0, c), BAGUA_ERR_INVALID_ARGUMENT,
                     "is this rank");
  test::expect_error(bagua_recv(buf.data(), 1, MPI_INT, MPI_ANY_SOURCE, 0, c),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_ANY_SOURCE");
  test::expect_error(bagua_send(buf.data(), 1, MPI_INT, (r + 1) % n, 32768, c),
                     BAGUA_ERR_INVALID_ARGUMENT, "tag 32768");
  test::expect_error(bagua_barrier(MPI_COMM_NULL), BAGUA_ERR_INVALID_ARGUMENT, "bagua_barrier");
  // Nothing was sent: the communicator still works.
  CHECK(bagua_barrier(c) == BAGUA_SUCCESS);
}

TEST_CASE("collectives whose ranks differ all return MISMATCH", "[collectives]") {
  test::ScopedComm comm;
  const int r = test::world_rank();
  std::vector<int> buf(16, 3);
  test::expect_error(bagua_bcast(buf.data(), r == 0 ? 8 : 16, MPI_INT, 0, comm.get()),
                     BAGUA_ERR_MISMATCH, "bagua_bcast: the ranks do not make the same call");
  test::expect_error(bagua_barrier(comm.get()), BAGUA_ERR_COMM_BROKEN, "bagua_barrier");
}

TEST_CASE("a receive of another size returns MISMATCH", "[collectives]") {
  test::ScopedComm comm;
  const int r = test::world_rank();
  std::vector<int> buf(16, 1);
  if (r == 0) CHECK(bagua_send(buf.data(), 16, MPI_INT, 1, 4, comm.get()) == BAGUA_SUCCESS);
  if (r == 1)
    test::expect_error(bagua_recv(buf.data(), 8, MPI_INT, 0, 4, comm.get()), BAGUA_ERR_MISMATCH,
                       "bagua_recv: rank 0 sent 64 bytes");
}

TEST_CASE("algorithm names and bagua_allreduce_alg", "[collectives]") {
  bagua_algorithm a = BAGUA_ALGORITHM_EXACT;
  // The values run from 0 without gaps; every name maps back to its value.
  int listed = 0;
  for (; bagua_algorithm_name(static_cast<bagua_algorithm>(listed)) != nullptr; ++listed) {
    const auto alg = static_cast<bagua_algorithm>(listed);
    REQUIRE(bagua_algorithm_from_name(bagua_algorithm_name(alg), &a) == BAGUA_SUCCESS);
    CHECK(a == alg);
  }
  CHECK(listed > BAGUA_ALGORITHM_MXFP8);
  CHECK(std::string(bagua_algorithm_name(BAGUA_ALGORITHM_Q4)) == "q4");
  CHECK(std::string(bagua_algorithm_name(BAGUA_ALGORITHM_MXFP8)) == "mxfp8");
  CHECK(bagua_algorithm_name(static_cast<bagua_algorithm>(-1)) == nullptr);
  CHECK(bagua_algorithm_offered(BAGUA_ALGORITHM_MXFP8, "iallreduce") == 1);
  CHECK(bagua_algorithm_offered(BAGUA_ALGORITHM_SIGN, "bucket") == 0);
  CHECK(bagua_algorithm_offered(BAGUA_ALGORITHM_Q8, "no such family") == 0);
  CHECK(bagua_algorithm_has_state(BAGUA_ALGORITHM_SIGN) == 1);
  CHECK(bagua_algorithm_has_state(BAGUA_ALGORITHM_Q8) == 0);
  test::expect_error(bagua_algorithm_from_name("int8", &a), BAGUA_ERR_INVALID_ARGUMENT,
                     "exact, q8, fp16, bf16, sign, q4, mxfp8");
  test::expect_error(bagua_algorithm_from_name(nullptr, &a), BAGUA_ERR_INVALID_ARGUMENT,
                     "name is NULL");
  test::ScopedComm comm;
  std::vector<float> in(3000), want(3000), got(3000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 17) * 0.25f + float(test::world_rank());
  for (bagua_algorithm alg : {BAGUA_ALGORITHM_EXACT, BAGUA_ALGORITHM_Q8, BAGUA_ALGORITHM_Q4,
                              BAGUA_ALGORITHM_FP16, BAGUA_ALGORITHM_BF16}) {
    INFO(bagua_algorithm_name(alg));
    using Named = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
    const Named named[] = {
        bagua_allreduce, bagua_allreduce_q8, bagua_allreduce_fp16, bagua_allreduce_bf16,
        nullptr,         bagua_allreduce_q4};
    REQUIRE(named[alg](in.data(), want.data(), 3000, MPI_FLOAT, MPI_SUM, comm.get()) ==
            BAGUA_SUCCESS);
    REQUIRE(bagua_allreduce_alg(in.data(), got.data(), 3000, MPI_FLOAT, MPI_SUM, comm.get(), alg) ==
            BAGUA_SUCCESS);
    CHECK(got == want);
  }
  test::expect_error(bagua_allreduce_alg(in.data(), got.data(), 3000, MPI_FLOAT, MPI_SUM,
                                         comm.get(), BAGUA_ALGORITHM_SIGN),
                     BAGUA_ERR_INVALID_ARGUMENT, "bagua_allreduce_sign");
}

TEST_CASE("a receive whose message never comes times out and breaks the communicator",
          "[collectives]") {
  test::ScopedComm comm({{"BAGUA_TIMEOUT_MS", "300"}});
  int value = 0;
  if (test::world_rank() == 0) {
    test::expect_error(bagua_recv(&value, 1, MPI_INT, 1, 0, comm.get()), BAGUA_ERR_TIMEOUT,
                       "bagua_recv");
    test::expect_error(bagua_barrier(comm.get()), BAGUA_ERR_COMM_BROKEN, "bagua_barrier");
  }
}
