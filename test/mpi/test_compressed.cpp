// Compressed allreduce (q8, q4, fp16, bf16, 1-bit sign) and compressed
// reduce-scatter: error bounds against the exact result computed from every
// rank's closed-form input, bit-identical outputs, odd counts, in-place,
// hierarchical mode, non-finite inputs, bad arguments.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "helpers.hpp"

using test::Type;

namespace {

using Allreduce = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);

struct Method {
  const char *name;
  Allreduce fn;
  bagua_algorithm algorithm;
};
const Method kMethods[] = {{"q8", bagua_allreduce_q8, BAGUA_ALGORITHM_Q8},
                           {"q4", bagua_allreduce_q4, BAGUA_ALGORITHM_Q4},
                           {"fp16", bagua_allreduce_fp16, BAGUA_ALGORITHM_FP16},
                           {"bf16", bagua_allreduce_bf16, BAGUA_ALGORITHM_BF16}};

// Smooth values in [-1, 1] that differ per rank.
double input(int rank, size_t i) { return std::sin(0.0137 * double(i) + 1.3 * rank); }

// The exact result from the inputs as stored in type t.
double exact(Type t, MPI_Op op, int n, size_t i) {
  double sum = 0;
  for (int r = 0; r < n; ++r) sum += test::TypedBuffer::round(t, input(r, i));
  return op == MPI_SUM ? sum : sum / n;
}

// How many times a result's values were encoded: the allreduce encodes the
// contributions and the reduced sum, the reduce-scatter the contributions
// alone.
enum class Encodings { contributions, contributions_and_sum };

// Documented bounds for inputs in [-1, 1]: q8 and q4 quantize each of the
// n - 1 other contributions (block range <= 2) and (allreduce) the reduced
// sum (range <= 2n) once, each with error <= range / 510 (q8) or range / 30
// (q4). fp16 rounds each scaled value to float16 (relative 2^-11, absolute
// 2^-25 in the subnormals) once per encoding; bf16 rounds each value to
// bfloat16 (relative 2^-8) once per encoding. Plus the rounding of the
// output type.
double bound(const char *method, Type t, MPI_Op op, int n, double value,
             Encodings encodings = Encodings::contributions_and_sum) {
  const std::string name = method;
  const bool sum_encoded = encodings == Encodings::contributions_and_sum;
  const double ranges = 2.0 * (n - 1) + (sum_encoded ? 2.0 * n : 0);
  const double roundings = sum_encoded ? 2.0 * n : double(n);
  double b = name == "q8"     ? ranges / 510.0
             : name == "q4"   ? ranges / 30.0
             : name == "bf16" ? roundings * std::ldexp(1.0, -8)
                              : roundings * (std::ldexp(1.0, -11) + n * std::ldexp(1.0, -25));
  if (op != MPI_SUM) b /= n;
  const double out_ulp = t == Type::f16    ? std::ldexp(1.0, -11)
                         : t == Type::bf16 ? std::ldexp(1.0, -8)
                                           : 1e-7;
  return b * 1.001 + std::fabs(value) * out_ulp + 1e-6;
}

// True on every rank iff this rank's bytes equal rank 0's.
bool same_on_all_ranks(const void *data, size_t bytes, MPI_Comm comm) {
  std::vector<unsigned char> root(static_cast<const unsigned char *>(data),
                                  static_cast<const unsigned char *>(data) + bytes);
  MPI_Bcast(root.data(), int(bytes), MPI_BYTE, 0, comm);
  return test::all_ranks(bytes == 0 || std::memcmp(root.data(), data, bytes) == 0);
}

// Runs one compressed allreduce and checks the error bound and that all
// ranks hold the same bytes.
void check_case(const Method &m, MPI_Comm comm, Type t, MPI_Op op, size_t count, bool in_place) {
  const int rank = test::world_rank(), n = test::world_size();
  test::TypedBuffer send(t, count), recv(t, count);
  test::TypedBuffer &in = in_place ? recv : send;
  for (size_t i = 0; i < count; ++i) in.set(i, input(rank, i));
  const int rc = m.fn(in_place ? MPI_IN_PLACE : send.data(), recv.data(), int(count),
                      test::mpi_type(t), op, comm);
  INFO("rank " << rank << " error: " << bagua_last_error());
  REQUIRE(rc == BAGUA_SUCCESS);
  size_t wrong = 0;
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = exact(t, op, n, i), err = std::fabs(recv.get(i) - want);
    worst = std::max(worst, err);
    wrong += !(err <= bound(m.name, t, op, n, want));
  }
  INFO("largest error " << worst);
  CHECK(wrong == 0);
  CHECK(same_on_all_ranks(recv.data(), count * test::type_size(t), comm));
}

// Under AddressSanitizer (bin/bagua-test's second pass, where every call is
// many times slower) one type and one op per method: the op only scales the
// reduced values, which the transport never sees, and the sanitizer pass
// runs the full matrix in-process too. (Both ops took 164 s at 3 ranks.)
#if defined(__SANITIZE_ADDRESS__)
constexpr Type kTypes[] = {Type::f32};
std::vector<MPI_Op> ops() { return {BAGUA_AVG}; }
#else
constexpr Type kTypes[] = {Type::f32, Type::f16, Type::bf16};
std::vector<MPI_Op> ops() { return {MPI_SUM, BAGUA_AVG}; }
#endif

// Every method, type and op over the real transport; counts alternate
// in place and out of place (the full count x type x op matrix at 1..16
// ranks runs in-process, test/inproc/test_compressed.cpp).
void run_matrix(MPI_Comm comm, std::initializer_list<size_t> counts) {
  for (const Method &m : kMethods)
    for (Type t : kTypes)
      for (MPI_Op op : ops()) {
        bool in_place = t == Type::f16;
        for (size_t count : counts) {
          INFO(m.name << " " << test::type_name(t) << (op == MPI_SUM ? " sum" : " avg") << " count "
                      << count << (in_place ? " in-place" : ""));
          check_case(m, comm, t, op, count, in_place);
          in_place = !in_place;
        }
      }
}

// One compressed reduce-scatter of `count` elements per rank: rank r's block
// holds elements [r * count, (r + 1) * count) of the sum of all inputs,
// within the bound of encoded contributions alone.
void check_reduce_scatter(const Method &m, MPI_Comm comm, Type t, MPI_Op op, size_t count,
                          bool in_place) {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t total = count * size_t(n);
  test::TypedBuffer send(t, total), recv(t, in_place ? total : count);
  test::TypedBuffer &in = in_place ? recv : send;
  for (size_t i = 0; i < total; ++i) in.set(i, input(rank, i));
  const int rc =
      bagua_reduce_scatter_block_alg(in_place ? MPI_IN_PLACE : send.data(), recv.data(), int(count),
                                     test::mpi_type(t), op, comm, m.algorithm);
  INFO("rank " << rank << " error: " << bagua_last_error());
  REQUIRE(rc == BAGUA_SUCCESS);
  size_t wrong = 0;
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = exact(t, op, n, size_t(rank) * count + i);
    const double err = std::fabs(recv.get(i) - want);
    worst = std::max(worst, err);
    wrong += !(err <= bound(m.name, t, op, n, want, Encodings::contributions));
  }
  INFO("largest error " << worst);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("compressed reduce-scatter stays within the bound of one encoding", "[compressed]") {
  const size_t n = size_t(test::world_size());
  test::ScopedComm comm(
      {{"BAGUA_SEGMENT_BYTES", "16384"}, {"BAGUA_CODEC_BLOCK", "256"}, {"BAGUA_Q4_BLOCK", "64"}});
  for (const Method &m : kMethods)
    for (Type t : kTypes)
      for (MPI_Op op : ops()) {
        bool in_place = t == Type::f16;
        for (size_t count : {size_t(0), size_t(7), n + 1, size_t(40001)}) {
          INFO(m.name << " " << test::type_name(t) << (op == MPI_SUM ? " sum" : " avg") << " count "
                      << count << (in_place ? " in-place" : ""));
          check_reduce_scatter(m, comm.get(), t, op, count, in_place);
          in_place = !in_place;
        }
      }
}

TEST_CASE(
    "compressed reduce-scatter: exact is bagua_reduce_scatter_block; mismatches and bad "
    "arguments are clear errors",
    "[compressed][errors]") {
  test::ScopedComm comm;
  const MPI_Comm c = comm.get();
  const int n = test::world_size(), r = test::world_rank();
  std::vector<float> in(size_t(3 * n)), exact_got(3), alg_got(3);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(r + 1) * float(i % 5);
  REQUIRE(bagua_reduce_scatter_block(in.data(), exact_got.data(), 3, MPI_FLOAT, MPI_SUM, c) ==
          BAGUA_SUCCESS);
  REQUIRE(bagua_reduce_scatter_block_alg(in.data(), alg_got.data(), 3, MPI_FLOAT, MPI_SUM, c,
                                         BAGUA_ALGORITHM_EXACT) == BAGUA_SUCCESS);
  CHECK(alg_got == exact_got);
  float *out = alg_got.data();
  test::expect_error(bagua_reduce_scatter_block_alg(in.data(), out, 3, MPI_FLOAT, MPI_SUM, c,
                                                    BAGUA_ALGORITHM_SIGN),
                     BAGUA_ERR_INVALID_ARGUMENT, "does not offer the sign wire format");
  test::expect_error(
      bagua_reduce_scatter_block_alg(in.data(), out, 3, MPI_FLOAT, MPI_MAX, c, BAGUA_ALGORITHM_Q8),
      BAGUA_ERR_UNSUPPORTED_OP, "MPI_SUM or BAGUA_AVG");
  test::expect_error(
      bagua_reduce_scatter_block_alg(in.data(), out, 1, MPI_DOUBLE, MPI_SUM, c, BAGUA_ALGORITHM_Q4),
      BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  test::expect_error(
      bagua_reduce_scatter_block_alg(in.data(), out, 3, MPI_FLOAT, MPI_SUM, c, bagua_algorithm(99)),
      BAGUA_ERR_INVALID_ARGUMENT, "algorithm 99");
  test::expect_error(bagua_reduce_scatter_block_alg(in.data(), in.data() + 1, 3, MPI_FLOAT, MPI_SUM,
                                                    c, BAGUA_ALGORITHM_Q8),
                     BAGUA_ERR_INVALID_ARGUMENT, "overlap");
  test::expect_error(
      bagua_reduce_scatter_block_alg(nullptr, out, 3, MPI_FLOAT, MPI_SUM, c, BAGUA_ALGORITHM_Q8),
      BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
  test::expect_error(bagua_reduce_scatter_block_alg(in.data(), nullptr, 3, MPI_FLOAT, MPI_SUM, c,
                                                    BAGUA_ALGORITHM_Q8),
                     BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is NULL");
  test::expect_error(
      bagua_reduce_scatter_block_alg(in.data(), out, -1, MPI_FLOAT, MPI_SUM, c, BAGUA_ALGORITHM_Q8),
      BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_reduce_scatter_block_alg(in.data(), out, 3, MPI_FLOAT, MPI_SUM,
                                                    MPI_COMM_NULL, BAGUA_ALGORITHM_Q8),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  if (n > 1) {
    // Rank 0 asks for another wire than the rest: every rank is told.
    const bagua_algorithm mine = r == 0 ? BAGUA_ALGORITHM_Q8 : BAGUA_ALGORITHM_Q4;
    test::expect_error(
        bagua_reduce_scatter_block_alg(in.data(), out, 3, MPI_FLOAT, MPI_SUM, c, mine),
        BAGUA_ERR_MISMATCH, "do not make the same call");
  }
}

TEST_CASE("compressed allreduce stays within its error bound, identical on all ranks",
          "[compressed]") {
  const size_t n = size_t(test::world_size());
  // Small segments and blocks so that larger counts run a multi-segment,
  // multi-block pipeline.
  test::ScopedComm comm(
      {{"BAGUA_SEGMENT_BYTES", "16384"}, {"BAGUA_CODEC_BLOCK", "256"}, {"BAGUA_Q4_BLOCK", "64"}});
  run_matrix(comm.get(), {0, 7, n + 1, 40001});
  test::ScopedComm defaults;
  run_matrix(defaults.get(), {100003});
}

TEST_CASE("hierarchical mode with 2-rank emulated nodes", "[compressed]") {
  test::ScopedComm comm({{"BAGUA_HIERARCHICAL", "1"},
                         {"BAGUA_NODE_SIZE", "2"},
                         {"BAGUA_SEGMENT_BYTES", "16384"},
                         {"BAGUA_CODEC_BLOCK", "256"}});
  run_matrix(comm.get(), {1, 5, 30001});
}

TEST_CASE("hierarchical mode within one shared-memory node is exact", "[compressed]") {
  // All ranks of this test share one machine: one node, no compression.
  test::ScopedComm comm({{"BAGUA_HIERARCHICAL", "1"}});
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 1001;
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = float((rank * 5 + i) % 11);
  REQUIRE(bagua_allreduce_q8(MPI_IN_PLACE, data.data(), int(count), MPI_FLOAT, MPI_SUM,
                             comm.get()) == BAGUA_SUCCESS);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < n; ++r) want += double((r * 5 + i) % 11);
    wrong += data[i] != want;
  }
  CHECK(wrong == 0);
}

TEST_CASE("non-finite inputs make their block NaN on every rank", "[compressed]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 10000, poisoned = 1234, far = 9000;
  for (const Method &m : kMethods) {
    for (float bad : {NAN, INFINITY}) {
      INFO(m.name << " with " << bad);
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = float(input(rank, i));
      if (rank == n - 1) data[poisoned] = bad;
      REQUIRE(m.fn(MPI_IN_PLACE, data.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
              BAGUA_SUCCESS);
      // q8 and q4 flag the whole block (NaN); fp16 and bf16 cast element-wise (Inf
      // stays Inf); one rank does no encoding at all.
      const std::string name = m.name;
      const bool flagged = n > 1 && (name == "q8" || name == "q4");
      if (flagged || std::isnan(bad)) CHECK(std::isnan(data[poisoned]));
      CHECK(!std::isfinite(data[poisoned]));
      CHECK(std::isfinite(data[far]));
      CHECK(same_on_all_ranks(data.data(), count * sizeof(float), MPI_COMM_WORLD));
    }
  }
}

TEST_CASE("sign allreduce of equal-magnitude inputs is exact", "[compressed][sign]") {
  // Every rank holds +-0.5 with the same sign pattern: every block's scale is
  // 0.5 and the sum is +-0.5 n, which the sign codec represents exactly.
  const int n = test::world_size();
  const size_t count = 5003;
  bagua_sign_state_t state = nullptr;
  REQUIRE(bagua_sign_state_create(int(count), MPI_COMM_WORLD, &state) == BAGUA_SUCCESS);
  for (MPI_Op op : {MPI_SUM, BAGUA_AVG}) {
    std::vector<float> in(count), out(count);
    for (size_t i = 0; i < count; ++i) in[i] = (i * 7919 % 13) < 6 ? -0.5f : 0.5f;
    REQUIRE(bagua_allreduce_sign(in.data(), out.data(), int(count), MPI_FLOAT, op, MPI_COMM_WORLD,
                                 state) == BAGUA_SUCCESS);
    const float factor = op == MPI_SUM ? float(n) : 1.0f;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) wrong += out[i] != in[i] * factor;
    CHECK(wrong == 0);
  }
  CHECK(bagua_sign_state_destroy(&state) == BAGUA_SUCCESS);
  CHECK(state == nullptr);
}

TEST_CASE("sign allreduce error feedback: the mean over calls converges", "[compressed][sign]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 3001;
  const int calls = 64;
  test::ScopedComm comm({{"BAGUA_CODEC_BLOCK", "64"}, {"BAGUA_SEGMENT_BYTES", "4096"}});
  bagua_sign_state_t state = nullptr;
  REQUIRE(bagua_sign_state_create(int(count), comm.get(), &state) == BAGUA_SUCCESS);
  std::vector<uint16_t> in(count), out(count);
  std::vector<double> total(count, 0.0);
  for (size_t i = 0; i < count; ++i) in[i] = bagua::float_to_bf16(float(input(rank, i)));
  // Root-mean-square error against the exact sum, of the first result and
  // of the mean of all results.
  auto rms_error = [&](double scale) {
    double sq = 0;
    for (size_t i = 0; i < count; ++i)
      sq += std::pow(total[i] / scale - exact(Type::bf16, MPI_SUM, n, i), 2);
    return std::sqrt(sq / double(count));
  };
  double first_error = 0;
  // The same gradient every call: the residuals carry what each 1-bit
  // result missed into the next call.
  for (int call = 0; call < calls; ++call) {
    REQUIRE(bagua_allreduce_sign(in.data(), out.data(), int(count), BAGUA_BFLOAT16, MPI_SUM,
                                 comm.get(), state) == BAGUA_SUCCESS);
    CHECK(same_on_all_ranks(out.data(), count * 2, comm.get()));
    for (size_t i = 0; i < count; ++i) total[i] += bagua::bf16_to_float(out[i]);
    if (call == 0) first_error = rms_error(1.0);
  }
  const double mean_error = rms_error(calls);
  INFO("first call error " << first_error << ", error of the mean " << mean_error);
  if (n > 1) CHECK(mean_error * 5 < first_error);
  CHECK(mean_error < 0.02 * n);
  CHECK(bagua_sign_state_destroy(&state) == BAGUA_SUCCESS);
}

TEST_CASE("sign state save and load: a restored state continues bit for bit",
          "[compressed][sign]") {
  const int rank = test::world_rank();
  const size_t count = 1537;
  bagua_sign_state_t original = nullptr, restored = nullptr;
  REQUIRE(bagua_sign_state_create(int(count), MPI_COMM_WORLD, &original) == BAGUA_SUCCESS);
  REQUIRE(bagua_sign_state_create(int(count), MPI_COMM_WORLD, &restored) == BAGUA_SUCCESS);
  std::vector<float> in(count), a(count), b(count), saved(2 * count);
  for (size_t i = 0; i < count; ++i) in[i] = float(input(rank, i));
  // Two calls build residuals; the copy then takes the same third call.
  for (int call = 0; call < 2; ++call)
    REQUIRE(bagua_allreduce_sign(in.data(), a.data(), int(count), MPI_FLOAT, MPI_SUM,
                                 MPI_COMM_WORLD, original) == BAGUA_SUCCESS);
  REQUIRE(bagua_sign_state_save(original, saved.data(), MPI_Count(2 * count)) == BAGUA_SUCCESS);
  CHECK(std::any_of(saved.begin(), saved.end(), [](float r) { return r != 0.0f; }));
  REQUIRE(bagua_sign_state_load(restored, saved.data(), MPI_Count(2 * count)) == BAGUA_SUCCESS);
  REQUIRE(bagua_allreduce_sign(in.data(), a.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                               original) == BAGUA_SUCCESS);
  REQUIRE(bagua_allreduce_sign(in.data(), b.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                               restored) == BAGUA_SUCCESS);
  CHECK(a == b);
  test::expect_error(bagua_sign_state_save(original, saved.data(), MPI_Count(count)),
                     BAGUA_ERR_INVALID_ARGUMENT, "not twice the state's count");
  test::expect_error(bagua_sign_state_load(restored, nullptr, MPI_Count(2 * count)),
                     BAGUA_ERR_INVALID_ARGUMENT, "buffer is NULL");
  test::expect_error(bagua_sign_state_save(nullptr, saved.data(), 0), BAGUA_ERR_INVALID_ARGUMENT,
                     "state is NULL");
  CHECK(bagua_sign_state_destroy(&original) == BAGUA_SUCCESS);
  CHECK(bagua_sign_state_destroy(&restored) == BAGUA_SUCCESS);
}

TEST_CASE("sign refuses a non-finite input on every rank, its residuals unchanged",
          "[compressed][sign]") {
  const int rank = test::world_rank(), n = test::world_size();
  const size_t count = 1000;
  // With and without the call check: a stateful call checks its input anyway.
  for (const char *check : {"1", "0"}) {
    INFO("BAGUA_CHECK_CALLS=" << check);
    test::ScopedComm comm({{"BAGUA_CHECK_CALLS", check}});
    // The same calls on two states, one of which also sees the refused call.
    bagua_sign_state_t state = nullptr, clean = nullptr;
    REQUIRE(bagua_sign_state_create(int(count), comm.get(), &state) == BAGUA_SUCCESS);
    REQUIRE(bagua_sign_state_create(int(count), comm.get(), &clean) == BAGUA_SUCCESS);
    std::vector<float> in(count), out(count), ref(count);
    for (size_t i = 0; i < count; ++i) in[i] = float(input(rank, i));
    const auto sign = [&](bagua_sign_state_t s, const std::vector<float> &x,
                          std::vector<float> &y) {
      return bagua_allreduce_sign(x.data(), y.data(), int(count), MPI_FLOAT, MPI_SUM, comm.get(),
                                  s);
    };
    REQUIRE(sign(state, in, out) == BAGUA_SUCCESS);
    REQUIRE(sign(clean, in, ref) == BAGUA_SUCCESS);
    for (float bad : {NAN, -INFINITY}) {
      std::vector<float> poisoned = in;
      if (rank == n - 1) poisoned[7] = bad;
      test::expect_error(sign(state, poisoned, out), BAGUA_ERR_INVALID_ARGUMENT,
                         rank == n - 1 ? "on this rank" : "on another rank");
    }
    // The next finite calls give what the clean state gives, bit for bit.
    for (int call = 0; call < 3; ++call) {
      REQUIRE(sign(state, in, out) == BAGUA_SUCCESS);
      REQUIRE(sign(clean, in, ref) == BAGUA_SUCCESS);
      CHECK(std::memcmp(out.data(), ref.data(), count * sizeof(float)) == 0);
    }
    bagua_sign_state_destroy(&state);
    bagua_sign_state_destroy(&clean);
  }
}

TEST_CASE("compressed allreduce rejects bad arguments clearly", "[compressed][errors]") {
  float a[8] = {}, b[8] = {};
  for (const Method &m : kMethods) {
    INFO(m.name);
    test::expect_error(m.fn(nullptr, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
    test::expect_error(m.fn(a, nullptr, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is NULL");
    test::expect_error(m.fn(a, b, -1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       BAGUA_ERR_INVALID_ARGUMENT, "negative");
    test::expect_error(m.fn(a, b, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                       BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
    test::expect_error(m.fn(a, b, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
                       BAGUA_ERR_UNSUPPORTED_DATATYPE, "BAGUA_FLOAT16");
    test::expect_error(m.fn(a, b, 8, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD), BAGUA_ERR_UNSUPPORTED_OP,
                       "MPI_SUM or BAGUA_AVG");
    test::expect_error(m.fn(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_NULL), BAGUA_ERR_INVALID_ARGUMENT,
                       "MPI_COMM_NULL");
    test::expect_error(m.fn(a, a + 2, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                       BAGUA_ERR_INVALID_ARGUMENT, "overlap");
    CHECK(m.fn(nullptr, nullptr, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == BAGUA_SUCCESS);
  }
}

TEST_CASE("sign state misuse is reported", "[compressed][errors]") {
  float a[8] = {}, b[8] = {};
  bagua_sign_state_t state = nullptr;
  test::expect_error(bagua_sign_state_create(-1, MPI_COMM_WORLD, &state),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_sign_state_create(8, MPI_COMM_NULL, &state), BAGUA_ERR_INVALID_ARGUMENT,
                     "MPI_COMM_NULL");
  test::expect_error(bagua_sign_state_create(8, MPI_COMM_WORLD, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  CHECK(bagua_sign_state_destroy(nullptr) == BAGUA_SUCCESS);
  test::expect_error(bagua_allreduce_sign(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "state is NULL");
  REQUIRE(bagua_sign_state_create(8, MPI_COMM_WORLD, &state) == BAGUA_SUCCESS);
  test::expect_error(bagua_allreduce_sign(a, b, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, state),
                     BAGUA_ERR_INVALID_ARGUMENT, "count 8");
  test::expect_error(bagua_allreduce_sign(a, b, 8, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF, state),
                     BAGUA_ERR_INVALID_ARGUMENT, "another comm");
  test::expect_error(bagua_allreduce_sign(a, b, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, state),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  CHECK(bagua_sign_state_destroy(&state) == BAGUA_SUCCESS);
  CHECK(bagua_sign_state_destroy(&state) == BAGUA_SUCCESS);  // NULL *state: no-op
}

TEST_CASE("bad compressed settings are clear errors", "[compressed][errors]") {
  for (auto [name, value] :
       {std::pair{"BAGUA_CODEC_BLOCK", "100"}, std::pair{"BAGUA_CODEC_BLOCK", "32"},
        std::pair{"BAGUA_HIERARCHICAL", "2"}, std::pair{"BAGUA_NODE_SIZE", "-1"},
        std::pair{"BAGUA_Q4_BLOCK", "96"}, std::pair{"BAGUA_Q4_BLOCK", "2097152"}}) {
    INFO(name << "=" << value);
    setenv(name, value, 1);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    float x = 1;
    test::expect_error(bagua_allreduce_q8(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                       BAGUA_ERR_INVALID_ARGUMENT, name);
    unsetenv(name);
    MPI_Comm_free(&comm);
  }
}
