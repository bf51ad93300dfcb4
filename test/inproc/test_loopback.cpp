// The loopback transport keeps the Transport contract (transport.hpp), and a
// mismatched byte count surfaces as BAGUA_ERR_MISMATCH without overflow.
// Transport cases drive two endpoints from the test thread: the fabric needs
// no threads, so every interleaving here is fixed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>
#include <string>
#include <thread>

#include "algo/allreduce.hpp"
#include "check.hpp"
#include "spawn.hpp"

using bagua::DType;
using bagua::ReduceOp;
using bagua::Request;
using bagua::Transport;
using inproc::Buffer;

namespace {

// The calls into lib/algo (adapt here when the interfaces are renamed).
bagua::Status ring(bagua::AlgoContext &ctx, const void *src, void *dst, size_t count) {
  return bagua::allreduce_ring(ctx, {src, dst, count, DType::f32, ReduceOp::sum});
}
bagua::Status recursive_doubling(bagua::AlgoContext &ctx, const void *src, void *dst,
                                 size_t count) {
  return bagua::allreduce_recursive_doubling(ctx, {src, dst, count, DType::f32, ReduceOp::sum});
}

// test() once: true when the request has completed with `expected`.
bool completes(Transport &t, Request &req, bagua::Status expected = BAGUA_SUCCESS) {
  bool done = false;
  const bagua::Status s = t.test(&req, &done);
  return done && s == expected && !req.active;
}

bool pending(Transport &t, Request &req) {
  bool done = true;
  return t.test(&req, &done) == BAGUA_SUCCESS && !done && req.active;
}

}  // namespace

TEST_CASE("loopback: a send completes at once and its bytes are copied", "[loopback]") {
  bagua::LoopbackFabric fabric(2);
  Transport &a = fabric.endpoint(0), &b = fabric.endpoint(1);
  CHECK(a.rank() == 0);
  CHECK(b.size() == 2);
  int value = 7, got = 0;
  Request send, recv;
  REQUIRE(a.isend(&value, sizeof value, 1, 3, &send) == BAGUA_SUCCESS);
  CHECK(completes(a, send));
  value = 8;  // the message keeps what was sent
  REQUIRE(b.irecv(&got, sizeof got, 0, 3, &recv) == BAGUA_SUCCESS);
  CHECK(completes(b, recv));
  CHECK(got == 7);
}

TEST_CASE("loopback: same peer and tag arrive in send order whether posted or not", "[loopback]") {
  bagua::LoopbackFabric fabric(2);
  Transport &a = fabric.endpoint(0), &b = fabric.endpoint(1);
  int first = 1, second = 2, third = 3, x = 0, y = 0, z = 0;
  Request s[3], r[3];
  // One receive posted before the messages, two after.
  REQUIRE(b.irecv(&x, sizeof x, 0, 9, &r[0]) == BAGUA_SUCCESS);
  CHECK(pending(b, r[0]));
  REQUIRE(a.isend(&first, sizeof first, 1, 9, &s[0]) == BAGUA_SUCCESS);
  REQUIRE(a.isend(&second, sizeof second, 1, 9, &s[1]) == BAGUA_SUCCESS);
  REQUIRE(a.isend(&third, sizeof third, 1, 9, &s[2]) == BAGUA_SUCCESS);
  REQUIRE(b.irecv(&y, sizeof y, 0, 9, &r[1]) == BAGUA_SUCCESS);
  REQUIRE(b.irecv(&z, sizeof z, 0, 9, &r[2]) == BAGUA_SUCCESS);
  for (int i = 0; i < 3; ++i) CHECK(completes(b, r[i]));
  CHECK(x == 1);
  CHECK(y == 2);
  CHECK(z == 3);
}

TEST_CASE("loopback: messages match on source and tag only", "[loopback]") {
  bagua::LoopbackFabric fabric(3);
  Transport &a = fabric.endpoint(0), &b = fabric.endpoint(1), &c = fabric.endpoint(2);
  int from_a = 10, from_c = 30, other_tag = 11, got_c = 0, got_a = 0, got_tag = 0;
  Request s[3], r[3];
  REQUIRE(b.irecv(&got_c, sizeof got_c, 2, 5, &r[0]) == BAGUA_SUCCESS);
  REQUIRE(b.irecv(&got_tag, sizeof got_tag, 0, 6, &r[1]) == BAGUA_SUCCESS);
  REQUIRE(a.isend(&from_a, sizeof from_a, 1, 5, &s[0]) == BAGUA_SUCCESS);
  CHECK(pending(b, r[0]));  // tag 5 from rank 0 is not tag 5 from rank 2
  CHECK(pending(b, r[1]));
  REQUIRE(c.isend(&from_c, sizeof from_c, 1, 5, &s[1]) == BAGUA_SUCCESS);
  REQUIRE(a.isend(&other_tag, sizeof other_tag, 1, 6, &s[2]) == BAGUA_SUCCESS);
  REQUIRE(b.irecv(&got_a, sizeof got_a, 0, 5, &r[2]) == BAGUA_SUCCESS);
  for (Request &req : r) CHECK(completes(b, req));
  CHECK(got_c == 30);
  CHECK(got_tag == 11);
  CHECK(got_a == 10);
}

TEST_CASE("loopback: a message of another size is a mismatch that writes nothing", "[loopback]") {
  bagua::LoopbackFabric fabric(2);
  Transport &a = fabric.endpoint(0), &b = fabric.endpoint(1);
  const std::vector<unsigned char> message(40, 0x11);
  // Larger, smaller, empty, and (as a control) the expected 32 bytes; the
  // receive posted before or after the message arrives.
  for (size_t sent : {size_t(40), size_t(16), size_t(0), size_t(32)})
    for (bool posted_first : {false, true}) {
      INFO(sent << " bytes into 32, receive posted " << (posted_first ? "first" : "second"));
      std::vector<unsigned char> into(64, 0x5a);
      Request s, r;
      if (posted_first) REQUIRE(b.irecv(into.data(), 32, 0, 1, &r) == BAGUA_SUCCESS);
      REQUIRE(a.isend(message.data(), sent, 1, 1, &s) == BAGUA_SUCCESS);
      if (!posted_first) REQUIRE(b.irecv(into.data(), 32, 0, 1, &r) == BAGUA_SUCCESS);
      CHECK(completes(a, s));
      const bool match = sent == 32;
      CHECK(completes(b, r, match ? BAGUA_SUCCESS : BAGUA_ERR_MISMATCH));
      if (!match)
        CHECK(std::string(bagua::last_error_message()).find("expected 32 bytes") !=
              std::string::npos);
      // Bytes [0, 32) hold the message only on a match; [32, 64) never change.
      const size_t written = match ? 32 : 0;
      CHECK(std::all_of(into.begin(), into.begin() + written, [](auto v) { return v == 0x11; }));
      CHECK(std::all_of(into.begin() + written, into.end(), [](auto v) { return v == 0x5a; }));
    }
}

TEST_CASE("loopback: an abandoned receive is never matched", "[loopback]") {
  bagua::LoopbackFabric fabric(2);
  Transport &a = fabric.endpoint(0), &b = fabric.endpoint(1);
  int value = 42, dropped = 0, kept = 0;
  Request s, r1, r2;
  REQUIRE(b.irecv(&dropped, sizeof dropped, 0, 4, &r1) == BAGUA_SUCCESS);
  b.abandon(&r1);
  CHECK(!r1.active);
  REQUIRE(b.irecv(&kept, sizeof kept, 0, 4, &r2) == BAGUA_SUCCESS);
  REQUIRE(a.isend(&value, sizeof value, 1, 4, &s) == BAGUA_SUCCESS);
  CHECK(completes(b, r2));
  CHECK(kept == 42);
  CHECK(dropped == 0);
  a.abandon(&s);  // abandoning a completed or in-flight send is harmless
}

TEST_CASE("loopback: bad peers are refused; a rank may send to itself", "[loopback]") {
  bagua::LoopbackFabric fabric(2);
  Transport &a = fabric.endpoint(0);
  int value = 5, got = 0;
  Request s, r;
  CHECK(a.isend(&value, sizeof value, 2, 0, &s) == BAGUA_ERR_INTERNAL);
  CHECK(a.irecv(&got, sizeof got, -1, 0, &r) == BAGUA_ERR_INTERNAL);
  CHECK(a.isend(&value, sizeof value, 0, bagua::kLoopbackMaxTag + 1, &s) == BAGUA_ERR_INTERNAL);
  REQUIRE(a.isend(&value, sizeof value, 0, 0, &s) == BAGUA_SUCCESS);
  REQUIRE(a.irecv(&got, sizeof got, 0, 0, &r) == BAGUA_SUCCESS);
  CHECK(completes(a, r));
  CHECK(got == 5);
}

TEST_CASE("loopback: concurrent senders keep per-pair order", "[loopback]") {
  // Every rank sends k = 0..199 to every other rank on one tag. Each rank
  // posts half of its receives before sending, half after, so both the
  // posted and the unexpected path race with the other senders.
  constexpr int kMessages = 200;
  const int n = 6;
  auto in_order = inproc::spawn(n, [&](Transport &t, int r) {
    std::vector<int> sent(kMessages), got(size_t(n) * kMessages, -1);
    std::iota(sent.begin(), sent.end(), 0);
    std::vector<Request> reqs(size_t(2 * n) * kMessages);
    size_t next = 0, posted = 0;
    // Post the first half of the receives, send everything, post the rest.
    for (int half = 0; half < 2; ++half) {
      for (int p = 0; p < n; ++p)
        for (int k = half * kMessages / 2; k < (half + 1) * kMessages / 2; ++k)
          if (p != r)
            posted += t.irecv(&got[size_t(p * kMessages + k)], sizeof(int), p, 7, &reqs[next++]) ==
                      BAGUA_SUCCESS;
      for (int p = 0; half == 0 && p < n; ++p)
        for (int k = 0; k < kMessages; ++k)
          if (p != r)
            posted += t.isend(&sent[size_t(k)], sizeof(int), p, 7, &reqs[next++]) == BAGUA_SUCCESS;
    }
    const bagua::Deadline deadline = bagua::Deadline::after_ms(inproc::kTimeoutMs);
    const bool ok = posted == next && bagua::wait_all(t, reqs, deadline) == BAGUA_SUCCESS;
    for (int p = 0; p < n; ++p)
      for (int k = 0; p != r && k < kMessages; ++k)
        if (got[size_t(p * kMessages + k)] != k) return false;
    return ok;
  });
  for (int r = 0; r < n; ++r) CHECK(in_order[size_t(r)]);
}

TEST_CASE("allreduce with different counts on two ranks fails with a mismatch", "[loopback]") {
  // Rank 0 reduces 8 floats, rank 1 reduces 12: every transfer has the
  // wrong size on the receiving side.
  for (bool use_ring : {true, false}) {
    auto outcomes = inproc::spawn(2, [&](Transport &t, int r) {
      inproc::Rank rank(t);
      const size_t count = r == 0 ? 8 : 12;
      Buffer send(DType::f32, count), recv(DType::f32, count);
      for (size_t i = 0; i < count; ++i) send.set(i, double(i));
      bagua::AlgoContext ctx = rank.next_call(1 << 20);
      inproc::Outcome o =
          inproc::outcome_of(use_ring ? ring(ctx, send.data(), recv.data(), count)
                                      : recursive_doubling(ctx, send.data(), recv.data(), count));
      o.guard_intact = send.guard_intact() && recv.guard_intact();
      return o;
    });
    INFO((use_ring ? "ring" : "recursive doubling"));
    for (const inproc::Outcome &o : outcomes) {
      INFO(o.describe());
      CHECK(o.status == BAGUA_ERR_MISMATCH);
      CHECK(o.guard_intact);
    }
  }
}

TEST_CASE("two collectives at once on every endpoint keep their messages apart", "[loopback]") {
  // Each rank runs a ring allreduce on its own thread and a recursive
  // doubling on a second one, over the same endpoint in two tag slots (as
  // the bucket engine runs concurrent buckets).
  const int n = 5;
  const size_t count = 3001;
  auto sums = inproc::spawn(n, [&](Transport &t, int r) {
    std::vector<float> a(count, float(r + 1)), b(count, float(2 * r));
    bagua::Status sa = BAGUA_ERR_INTERNAL, sb = BAGUA_ERR_INTERNAL;
    std::thread second([&] {
      inproc::Rank rank(t, 1, 2);
      bagua::AlgoContext ctx = rank.next_call(256);
      sb = recursive_doubling(ctx, b.data(), b.data(), count);
    });
    inproc::Rank rank(t, 0, 2);
    bagua::AlgoContext ctx = rank.next_call(256);
    sa = ring(ctx, a.data(), a.data(), count);
    second.join();
    const bool a_ok =
        std::all_of(a.begin(), a.end(), [&](float v) { return v == n * (n + 1) / 2; });
    const bool b_ok = std::all_of(b.begin(), b.end(), [&](float v) { return v == n * (n - 1); });
    return sa == BAGUA_SUCCESS && sb == BAGUA_SUCCESS && a_ok && b_ok;
  });
  for (int r = 0; r < n; ++r) CHECK(sums[size_t(r)]);
}
