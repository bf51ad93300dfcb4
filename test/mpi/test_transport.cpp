// The mpi transport's pieces (BAGUA_MPI_PIECE_BYTES) under a window of
// pieces in flight (BAGUA_MPI_PIECES_IN_FLIGHT): order, progress and
// abandonment, on 2 ranks over the transport itself.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "transport/mpi_transport.hpp"

namespace {

using bagua::Deadline;
using bagua::Request;
using bagua::Transport;

constexpr size_t kPiece = 4096;

// Byte i of message m from rank r.
unsigned char pattern(int r, size_t m, size_t i) {
  return static_cast<unsigned char>(r * 31 + m * 7 + i);
}

struct Pair {
  MPI_Comm comm = MPI_COMM_NULL;
  std::unique_ptr<Transport> t;
};

// A transport over a duplicate of the first two ranks; the comm is left to
// the process (a test that abandons a send must not free it).
Pair make_pair(size_t in_flight) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Pair p;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &p.comm);
  if (p.comm == MPI_COMM_NULL) return p;
  REQUIRE(bagua::mpi_transport_create(p.comm, {kPiece, false, in_flight}, 10000, &p.t) ==
          BAGUA_SUCCESS);
  return p;
}

}  // namespace

TEST_CASE("sends beyond the window leave in order, and waiting on receives moves the window",
          "[transport]") {
  // Messages with one tag, pieced (10 pieces and a rest), whole (below a
  // piece: behind waiting pieces it waits too), and pieced again, then one
  // with another tag. Each rank waits on its receives last first: the
  // peer's waiting pieces must be posted while it waits on its own, or both
  // ranks would wait until the deadline.
  const std::vector<std::pair<size_t, bagua::Tag>> messages = {
      {10 * kPiece + 100, 7}, {100, 7}, {3 * kPiece + 1, 7}, {50, 8}};
  for (size_t in_flight : {size_t(0), size_t(1), size_t(2), size_t(64)}) {
    INFO("pieces in flight " << in_flight);
    Pair pair = make_pair(in_flight);
    if (!pair.t) continue;
    Transport &t = *pair.t;
    const int peer = 1 - t.rank();
    std::vector<std::vector<unsigned char>> out, in;
    for (size_t m = 0; m < messages.size(); ++m) {
      out.emplace_back(messages[m].first);
      for (size_t i = 0; i < out[m].size(); ++i) out[m][i] = pattern(t.rank(), m, i);
      in.emplace_back(messages[m].first, 0);
    }
    std::vector<Request> sends(messages.size()), recvs(messages.size());
    for (size_t m = 0; m < messages.size(); ++m) {
      REQUIRE(t.isend(out[m].data(), out[m].size(), peer, messages[m].second, &sends[m]) ==
              BAGUA_SUCCESS);
      REQUIRE(t.irecv(in[m].data(), in[m].size(), peer, messages[m].second, &recvs[m]) ==
              BAGUA_SUCCESS);
    }
    const Deadline deadline = Deadline::after_ms(20000);
    for (size_t m = messages.size(); m-- > 0;)
      REQUIRE(bagua::wait(t, recvs[m], deadline) == BAGUA_SUCCESS);
    REQUIRE(bagua::wait_all(t, sends, deadline) == BAGUA_SUCCESS);
    for (size_t m = 0; m < messages.size(); ++m) {
      size_t wrong = 0;
      for (size_t i = 0; i < in[m].size(); ++i) wrong += in[m][i] != pattern(peer, m, i);
      CHECK(wrong == 0);
    }
    CHECK_FALSE(t.late_messages_possible());
    pair.t.reset();
    MPI_Comm_free(&pair.comm);
  }
}

TEST_CASE("an abandoned send with pieces still waiting leaves the transport usable",
          "[transport]") {
  Pair pair = make_pair(1);
  if (!pair.t) return;
  Transport &t = *pair.t;
  const int peer = 1 - t.rank();
  // Rank 0 starts 8 pieces that rank 1 never receives, and gives up: one
  // piece was posted, seven never leave.
  std::vector<unsigned char> big(8 * kPiece - 1, 1);
  if (t.rank() == 0) {
    Request abandoned;
    REQUIRE(t.isend(big.data(), big.size(), peer, 3, &abandoned) == BAGUA_SUCCESS);
    t.abandon(&abandoned);
    CHECK_FALSE(abandoned.active);
    CHECK(t.late_messages_possible());
  }
  // Then a message both ways, under another tag, arrives whole.
  uint64_t mine = 1000 + uint64_t(t.rank()), theirs = 0;
  Request send, recv;
  REQUIRE(t.isend(&mine, sizeof(mine), peer, 4, &send) == BAGUA_SUCCESS);
  REQUIRE(t.irecv(&theirs, sizeof(theirs), peer, 4, &recv) == BAGUA_SUCCESS);
  const Deadline deadline = Deadline::after_ms(20000);
  REQUIRE(bagua::wait(t, recv, deadline) == BAGUA_SUCCESS);
  REQUIRE(bagua::wait(t, send, deadline) == BAGUA_SUCCESS);
  CHECK(theirs == 1000 + uint64_t(peer));
  // The abandoned bytes may still arrive: the comm stays allocated
  // (Transport::late_messages_possible).
  pair.t.reset();
}
