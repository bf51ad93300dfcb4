// Bad input returns a clear error code and message, never a crash or a hang.
#include <atomic>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
  // Any pointer is fine when there is nothing to reduce, as in MPI.
  CHECK(bagua_allreduce(nullptr, nullptr, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == BAGUA_SUCCESS);
  auto *odd = reinterpret_cast<char *>(b) + 1;
  CHECK(bagua_allreduce(odd, odd + 2, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == BAGUA_SUCCESS);
  CHECK(bagua_allreduce_q8(MPI_IN_PLACE, odd, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) ==
        BAGUA_SUCCESS);
}

TEST_CASE("new entry points reject bad arguments clearly", "[errors]") {
  float a[8] = {}, b[8] = {};
  const MPI_Comm w = MPI_COMM_WORLD;
  MPI_Count bytes = 0;
  test::expect_error(bagua_allreduce_bytes(BAGUA_ALGORITHM_Q8, 8, MPI_FLOAT, w, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "bytes is NULL");
  test::expect_error(bagua_allreduce_bytes(BAGUA_ALGORITHM_Q8, -1, MPI_FLOAT, w, &bytes),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_allreduce_bytes(BAGUA_ALGORITHM_Q8, 8, MPI_FLOAT, MPI_COMM_NULL, &bytes),
                     BAGUA_ERR_INVALID_ARGUMENT, "MPI_COMM_NULL");
  test::expect_error(
      bagua_allreduce_bytes(static_cast<bagua_algorithm>(99), 8, MPI_FLOAT, w, &bytes),
      BAGUA_ERR_INVALID_ARGUMENT, "not a bagua_algorithm");
  test::expect_error(bagua_allreduce_bytes(BAGUA_ALGORITHM_EXACT, 8, MPI_INT, w, &bytes),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "datatype");
  test::expect_error(bagua_encoded_bytes(BAGUA_ALGORITHM_Q8, -3, MPI_FLOAT, &bytes),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  test::expect_error(bagua_encoded_bytes(BAGUA_ALGORITHM_Q8, 8, MPI_FLOAT, nullptr),
                     BAGUA_ERR_INVALID_ARGUMENT, "bytes is NULL");
  REQUIRE(bagua_encoded_bytes(BAGUA_ALGORITHM_EXACT, 8, MPI_FLOAT, &bytes) == BAGUA_SUCCESS);
  CHECK(bytes == 32);
  // q4, default blocks of 256: three full blocks (16 + 128 bytes) and one of
  // 232 elements (16 + 116 bytes, padded to 16 + 128).
  REQUIRE(bagua_encoded_bytes(BAGUA_ALGORITHM_Q4, 1000, MPI_FLOAT, &bytes) == BAGUA_SUCCESS);
  CHECK(bytes == 4 * (16 + 128));
  test::expect_error(bagua_allreduce_c(a, b, -1, MPI_FLOAT, MPI_SUM, w), BAGUA_ERR_INVALID_ARGUMENT,
                     "negative");
  test::expect_error(bagua_allreduce_q8_c(nullptr, b, 8, MPI_FLOAT, MPI_SUM, w),
                     BAGUA_ERR_INVALID_ARGUMENT, "sendbuf is NULL");
  test::expect_error(bagua_allreduce_q4_c(a, b, -2, MPI_FLOAT, MPI_SUM, w),
                     BAGUA_ERR_INVALID_ARGUMENT, "negative");
  double da[8] = {}, db[8] = {};
  test::expect_error(bagua_allreduce_bf16(da, db, 8, MPI_DOUBLE, MPI_SUM, w),
                     BAGUA_ERR_UNSUPPORTED_DATATYPE, "for bf16");
  test::expect_error(bagua_allreduce_bf16(a, b, 8, MPI_FLOAT, MPI_MAX, w), BAGUA_ERR_UNSUPPORTED_OP,
                     "for bf16");
  test::expect_error(bagua_allreduce(a, MPI_IN_PLACE, 8, MPI_FLOAT, MPI_SUM, w),
                     BAGUA_ERR_INVALID_ARGUMENT, "recvbuf is MPI_IN_PLACE");
  // A config whose struct_size this library does not know is refused.
  bagua_bucket_config config = BAGUA_BUCKET_CONFIG_INITIALIZER;
  config.struct_size = 4;
  bagua_bucket_comm_t bc = nullptr;
  test::expect_error(bagua_bucket_comm_create(w, &config, &bc), BAGUA_ERR_INVALID_ARGUMENT,
                     "struct_size");
  CHECK(bc == nullptr);
}

TEST_CASE("misaligned buffers work, as MPI accepts them", "[errors]") {
  // Bytes at odd offsets: float elements straddle their natural alignment.
  const int n = test::world_size(), rank = test::world_rank();
  constexpr int kCount = 1001;
  using Reduce = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  for (Reduce reduce : {Reduce(bagua_allreduce), Reduce(bagua_allreduce_q8)}) {
    for (bool in_place : {false, true}) {
      std::vector<char> send(kCount * sizeof(float) + 1), recv(kCount * sizeof(float) + 3);
      char *in = in_place ? recv.data() + 3 : send.data() + 1;
      for (int i = 0; i < kCount; ++i) {
        const float v = float((i + rank) % 4);
        std::memcpy(in + i * sizeof(float), &v, sizeof v);
      }
      REQUIRE(reduce(in_place ? MPI_IN_PLACE : in, recv.data() + 3, kCount, MPI_FLOAT, MPI_SUM,
                     MPI_COMM_WORLD) == BAGUA_SUCCESS);
      // Sums of small integers: exact for q8 too when every block spans 0..3.
      int wrong = 0;
      for (int i = 0; i < kCount; ++i) {
        float got = 0, want = 0;
        std::memcpy(&got, recv.data() + 3 + i * sizeof(float), sizeof got);
        for (int r = 0; r < n; ++r) want += float((i + r) % 4);
        wrong += std::fabs(got - want) > (reduce == Reduce(bagua_allreduce) ? 0.0 : 0.1 * n);
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("two threads on one communicator: the second is refused, the first completes",
          "[errors][threads]") {
  // On rank 0 two threads call bagua_allreduce on `comm` at once. Neither can
  // complete before rank 1 calls (which it does only after rank 0 heard back
  // from one of them), so both calls overlap: one must be refused at once,
  // the other completes when rank 1 joins. Needs 2+ ranks.
  const int n = test::world_size(), rank = test::world_rank();
  if (n < 2) return;
  test::ScopedComm comm;
  std::vector<float> a(64, 1.0f), b(64, 1.0f);
  if (rank == 0) {
    std::atomic<int> finished{0}, refused{0};
    std::string message;
    std::mutex mutex;
    auto call = [&](std::vector<float> &data) {
      const int rc = bagua_allreduce(MPI_IN_PLACE, data.data(), 64, MPI_FLOAT, MPI_SUM, comm.get());
      if (rc == BAGUA_ERR_INVALID_ARGUMENT) {
        std::lock_guard lock(mutex);
        message = bagua_last_error();
        ++refused;
      }
      ++finished;
    };
    std::thread first(call, std::ref(a)), second(call, std::ref(b));
    while (finished.load() == 0) std::this_thread::yield();
    const int go = 1;
    MPI_Send(&go, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);  // the refused call has returned
    first.join();
    second.join();
    CHECK(refused == 1);
    CHECK(message.find("another thread") != std::string::npos);
    // The call that ran summed n ranks' ones.
    CHECK((a[0] == float(n) || b[0] == float(n)));
  } else {
    int go = 0;
    if (rank == 1) MPI_Recv(&go, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    REQUIRE(bagua_allreduce(MPI_IN_PLACE, a.data(), 64, MPI_FLOAT, MPI_SUM, comm.get()) ==
            BAGUA_SUCCESS);
  }
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

TEST_CASE(
    "bad BAGUA_TAG_UB, BAGUA_CHECK_CALLS, BAGUA_MAX_IN_FLIGHT, BAGUA_MPI_PIECE_BYTES and "
    "BAGUA_MPI_PIECES_IN_FLIGHT values are clear errors",
    "[errors]") {
  for (auto [name, value] : {std::pair{"BAGUA_TAG_UB", "100"},
                             {"BAGUA_CHECK_CALLS", "2"},
                             {"BAGUA_MAX_IN_FLIGHT", "0"},
                             {"BAGUA_MAX_IN_FLIGHT", "1025"},
                             {"BAGUA_MPI_PIECE_BYTES", "1023"},
                             {"BAGUA_MPI_PIECE_BYTES", "-1"},
                             {"BAGUA_MPI_PIECE_BYTES", "big"},
                             {"BAGUA_MPI_PIECES_IN_FLIGHT", "-1"},
                             {"BAGUA_MPI_PIECES_IN_FLIGHT", "1048577"}}) {
    setenv(name, value, 1);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    float x = 1;
    test::expect_error(bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                       BAGUA_ERR_INVALID_ARGUMENT, name);
    unsetenv(name);
    MPI_Comm_free(&comm);
  }
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
  // Above 4 KiB, where Open MPI's single-copy path would write a larger
  // message past a smaller receive buffer: the check runs before data moves.
  std::vector<float> data(8192, 1.0f);
  const int count = test::world_rank() == 0 ? 4096 : 8192;
  const int rc = bagua_allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, comm.get());
  test::expect_error(rc, BAGUA_ERR_MISMATCH, "same call");
  test::expect_error(bagua_allreduce(MPI_IN_PLACE, data.data(), 16, MPI_FLOAT, MPI_SUM, comm.get()),
                     BAGUA_ERR_COMM_BROKEN, "earlier call failed");
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a count mismatch the call check skips is a MISMATCH of pieces on every rank",
          "[errors]") {
  const char *transport = std::getenv("BAGUA_TRANSPORT");
  if (test::world_size() != 2 || (transport && std::string(transport) != "mpi")) return;
  // Ring chunks of 8 KiB against 16 KiB, in 2 KiB pieces: a piece of another
  // size arrives on both ranks (the 0-byte last piece of 8 KiB, and a 2 KiB
  // one where the 0-byte piece was expected), and no piece is truncated
  // (MPICH would abort).
  test::ScopedComm comm({{"BAGUA_TIMEOUT_MS", "3000"},
                         {"BAGUA_CHECK_CALLS", "0"},
                         {"BAGUA_ALLREDUCE_ALGO", "ring"},
                         {"BAGUA_MPI_PIECE_BYTES", "2048"}});
  std::vector<float> data(8192, 1.0f);
  const int count = test::world_rank() == 0 ? 4096 : 8192;
  const int rc = bagua_allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, comm.get());
  test::expect_error(rc, BAGUA_ERR_MISMATCH, "same count and datatype");
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("calls that differ only in what their bytes mean fail with MISMATCH on every rank",
          "[errors][mismatch]") {
  if (test::world_size() < 2) return;
  // Rank 0 makes one call, the others another that moves the same bytes.
  using Call = std::function<int(bool first, void *buf, MPI_Comm comm)>;
  const std::pair<const char *, Call> cases[] = {
      {"float x64 vs double x32",
       [](bool first, void *buf, MPI_Comm c) {
         return bagua_allreduce(MPI_IN_PLACE, buf, first ? 64 : 32, first ? MPI_FLOAT : MPI_DOUBLE,
                                MPI_SUM, c);
       }},
      {"MPI_SUM vs MPI_MAX",
       [](bool first, void *buf, MPI_Comm c) {
         return bagua_allreduce(MPI_IN_PLACE, buf, 64, MPI_FLOAT, first ? MPI_SUM : MPI_MAX, c);
       }},
      {"BAGUA_FLOAT16 vs BAGUA_BFLOAT16",
       [](bool first, void *buf, MPI_Comm c) {
         return bagua_allreduce(MPI_IN_PLACE, buf, 64, first ? BAGUA_FLOAT16 : BAGUA_BFLOAT16,
                                MPI_SUM, c);
       }},
      {"q8 MPI_SUM vs BAGUA_AVG",
       [](bool first, void *buf, MPI_Comm c) {
         return bagua_allreduce_q8(MPI_IN_PLACE, buf, 64, MPI_FLOAT, first ? MPI_SUM : BAGUA_AVG,
                                   c);
       }},
      {"q8 float x64 vs q8 float16 x128",
       [](bool first, void *buf, MPI_Comm c) {
         return bagua_allreduce_q8(MPI_IN_PLACE, buf, first ? 64 : 128,
                                   first ? MPI_FLOAT : BAGUA_FLOAT16, MPI_SUM, c);
       }},
      {"q8 vs fp16",
       [](bool first, void *buf, MPI_Comm c) {
         return (first ? bagua_allreduce_q8 : bagua_allreduce_fp16)(MPI_IN_PLACE, buf, 64,
                                                                    MPI_FLOAT, MPI_SUM, c);
       }},
      {"decentralized float x64 vs double x32",
       [](bool first, void *buf, MPI_Comm c) {
         return bagua_decentralized_average(MPI_IN_PLACE, buf, first ? 64 : 32,
                                            first ? MPI_FLOAT : MPI_DOUBLE, BAGUA_PEER_RING, 0, 1,
                                            c);
       }},
  };
  const bool first = test::world_rank() == 0;
  for (const auto &[name, call] : cases) {
    INFO(name);
    test::ScopedComm comm({{"BAGUA_TIMEOUT_MS", "5000"}});
    std::vector<double> buf(64, 0.0);
    test::expect_error(call(first, buf.data(), comm.get()), BAGUA_ERR_MISMATCH, "same call");
  }
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

TEST_CASE("a peer that never makes the first call: setup times out, then comm is refused",
          "[errors][setup]") {
  if (test::world_size() < 2) return;
  setenv("BAGUA_TIMEOUT_MS", "1500", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  float x = 1;
  // The last rank never makes its first bagua call on comm.
  if (test::world_rank() != test::world_size() - 1) {
    test::expect_error(bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                       BAGUA_ERR_TIMEOUT, "did not make the matching call");
    test::expect_error(bagua_allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm),
                       BAGUA_ERR_COMM_BROKEN, "setup on this communicator failed");
  }
  unsetenv("BAGUA_TIMEOUT_MS");
  MPI_Barrier(MPI_COMM_WORLD);
  // comm is kept: its setup collective stays posted (bagua.h).
}

TEST_CASE("a blocking call against a peer's nonblocking first call: both fail, none hangs",
          "[errors][setup]") {
  if (test::world_size() < 2) return;
  setenv("BAGUA_TIMEOUT_MS", "1500", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::vector<float> x(16, 1.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::world_rank() == 0) {
    // Its call check times out, or (a peer slowed by a loaded machine) the
    // shared setup does: a timeout either way.
    CHECK(bagua_allreduce(MPI_IN_PLACE, x.data(), 16, MPI_FLOAT, MPI_SUM, comm) ==
          BAGUA_ERR_TIMEOUT);
  } else {
    MPI_Request req = MPI_REQUEST_NULL;
    test::expect_error(bagua_iallreduce(MPI_IN_PLACE, x.data(), 16, MPI_FLOAT, MPI_SUM, comm, &req),
                       BAGUA_ERR_TIMEOUT, "did not make the matching call");
    CHECK(req == MPI_REQUEST_NULL);
  }
  unsetenv("BAGUA_TIMEOUT_MS");
  MPI_Barrier(MPI_COMM_WORLD);
  // comm is kept: rank 1's setup collective stays posted (bagua.h).
}
TEST_CASE("a peer still sending after a rank timed out: no crash, no wrong result",
          "[errors][late]") {
  if (test::world_size() < 2) return;
  using Call = int (*)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
  const std::pair<const char *, Call> calls[] = {
      {"q8", &bagua_allreduce_q8}, {"fp16", &bagua_allreduce_fp16}, {"exact", &bagua_allreduce}};
  // Large enough for bagua's scratch to be its own mapping, which freeing
  // returns to the system. The user's buffer outlives MPI_Finalize, as
  // bagua.h asks after a failure.
  const int count = 8 << 20;
  static std::vector<float> data;
  for (const auto &[name, call] : calls) {
    INFO(name);
    data.assign(size_t(count), 1.0f);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    // Rank 0 gives up within a few milliseconds, mid-transfer; the others
    // keep going until they notice.
    setenv("BAGUA_TIMEOUT_MS", test::world_rank() == 0 ? "5" : "3000", 1);
    MPI_Barrier(MPI_COMM_WORLD);
    float one = 1;
    const int src = bagua_allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, comm);
    const bool set_up = test::all_ranks(src == 0);
    unsetenv("BAGUA_TIMEOUT_MS");
    // A setup that timed out leaves an MPI collective pending on comm, so
    // comm is kept (bagua.h); that happens only on a loaded machine.
    if (!set_up) continue;
    const int rc = call(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, comm);
    INFO(bagua_last_error());
    CHECK((rc == BAGUA_SUCCESS || rc == BAGUA_ERR_TIMEOUT || rc == BAGUA_ERR_TRANSPORT));
    if (rc == BAGUA_SUCCESS) CHECK(data[size_t(count) - 1] == float(test::world_size()));
    // Frees bagua's state (and scratch) while the others may still be sending.
    MPI_Comm_free(&comm);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST_CASE("a refused nonblocking call keeps the ranks in step: no result pairs wrong calls",
          "[errors][iallreduce]") {
  if (test::world_size() != 2) return;
  constexpr int kLimit = 4;
  // Long enough that rank 0's waiting calls outlast rank 1's catching up on
  // a loaded machine; only the unpaired calls wait it out.
  setenv("BAGUA_TIMEOUT_MS", "10000", 1);
  setenv("BAGUA_MAX_IN_FLIGHT", "4", 1);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  // Call k contributes k on every rank, so a sum pairing different calls shows.
  std::vector<float> values(kLimit + 3);
  std::vector<MPI_Request> reqs(values.size(), MPI_REQUEST_NULL);
  const auto start = [&](int k) {
    values[size_t(k)] = float(k);
    return bagua_iallreduce(MPI_IN_PLACE, &values[size_t(k)], 1, MPI_FLOAT, MPI_SUM, comm,
                            &reqs[size_t(k)]);
  };
  // Waits for call k; a success must hold the sum of the ranks' call k.
  const auto finish = [&](int k) {
    const int rc = MPI_Wait(&reqs[size_t(k)], MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) CHECK(values[size_t(k)] == float(2 * k));
    return rc;
  };
  REQUIRE(start(0) == BAGUA_SUCCESS);  // the collective setup
  REQUIRE(finish(0) == MPI_SUCCESS);
  unsetenv("BAGUA_MAX_IN_FLIGHT");
  unsetenv("BAGUA_TIMEOUT_MS");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // Rank 0 fills the limit before rank 1 starts (none of its calls can
  // complete before), so its call kLimit + 1 is refused; rank 1 makes its
  // calls one at a time, so none of its calls is refused.
  if (test::world_rank() == 0) {
    for (int k = 1; k <= kLimit; ++k) REQUIRE(start(k) == BAGUA_SUCCESS);
    test::expect_error(start(kLimit + 1), BAGUA_ERR_INVALID_ARGUMENT, "in flight");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 1; k <= kLimit; ++k) CHECK(finish(k) == MPI_SUCCESS);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 1; k <= kLimit + 1; ++k) {
      REQUIRE(start(k) == BAGUA_SUCCESS);
      // Call kLimit + 1 pairs with rank 0's refused call: it cannot succeed.
      CHECK((finish(k) == MPI_SUCCESS) == (k <= kLimit));
    }
  }
  // The next call pairs with the peer's next call or fails, never with an
  // earlier one (before the fix rank 0's pairing shifted by one: 2k - 1).
  if (start(kLimit + 2) == BAGUA_SUCCESS) finish(kLimit + 2);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&comm);
}
