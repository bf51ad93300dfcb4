#include "mpi_transport.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mpi_bounded.hpp"
#include "mpi_hosts.hpp"

namespace bagua {
namespace {

Status mpi_error(int code, const char *what, const Request &req) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return fail(BAGUA_ERR_TRANSPORT, "MPI %s (peer %d, %zu bytes): %s", what, req.peer, req.bytes,
              text);
}

// One message of `bytes` bytes as MPI sees it: `count` MPI_BYTEs up to
// INT_MAX; above that one element of a derived type (1 GiB blocks and the
// remainder), so no message is limited by MPI's int count.
struct Shape {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
  bool derived = false;
};

Shape shape_of(size_t bytes) {
  if (bytes <= static_cast<size_t>(INT_MAX)) return {MPI_BYTE, static_cast<int>(bytes), false};
  constexpr size_t kBlock = size_t{1} << 30;
  MPI_Datatype block, blocks, whole;
  MPI_Type_contiguous(static_cast<int>(kBlock), MPI_BYTE, &block);
  MPI_Type_contiguous(static_cast<int>(bytes / kBlock), block, &blocks);
  const size_t rest = bytes % kBlock;
  int lengths[2] = {1, static_cast<int>(rest)};
  MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(bytes - rest)};
  MPI_Datatype types[2] = {blocks, MPI_BYTE};
  MPI_Type_create_struct(rest > 0 ? 2 : 1, lengths, displacements, types, &whole);
  MPI_Type_commit(&whole);
  MPI_Type_free(&block);
  MPI_Type_free(&blocks);
  return {whole, 1, true};
}

// A derived type may be freed once the operation using it is posted.
void release(Shape &shape) {
  if (shape.derived) MPI_Type_free(&shape.type);
}

// Pieces of a large message (MpiTransport::piece_bytes_ > 0): floor(bytes /
// P) pieces of P bytes and a last one of bytes % P (possibly empty), all
// with the message's tag, so MPI's ordering of equal tags keeps them in
// place. Sender and receiver cut by the same rule, so a receive of another
// size meets a piece of another size, and its count differs: the receive
// fails with BAGUA_ERR_MISMATCH as a whole message would. The last piece is
// received into a bounce buffer of P bytes and copied, so no piece is ever
// truncated (MPICH aborts on truncation inside MPI_Test; Open MPI's
// shared-memory path writes past the buffer). A receive posts all its
// pieces at once; sends to one peer keep at most MpiPieces::in_flight
// pieces posted (PeerSends).
struct Pieces {
  Request request;  // the message (buffer, bytes, peer, tag)
  std::vector<MPI_Request> handles;
  size_t next = 0;                  // the first piece not yet known to be complete
  size_t posted = 0;                // the pieces posted to MPI so far
  std::vector<unsigned char> last;  // receives: the bounce buffer of the last piece
  // Sends: a piece that failed while another request moved the window, and
  // its message for bagua_last_error.
  Status failure = BAGUA_SUCCESS;
  std::string message;
};

// The sends to one peer that go as Pieces, in the order they were posted,
// until all their pieces are complete, and how many of their pieces MPI
// holds. Open MPI over TCP slows down with the sends it holds (a 64 MiB
// exchange between 2 emulated 10 Gbit hosts: 640 MB/s with its 1093 pieces
// posted at once, 870 MB/s with 64; doc/transports.md, "Pieces in flight"),
// so the others wait here and are posted, in order, as earlier ones
// complete. Once one waits, any later send to that peer waits behind it, so
// messages with the same (peer, tag) still leave in the order they were sent.
struct PeerSends {
  std::deque<uint32_t> queue;  // indices into MpiTransport::pool_
  size_t in_flight = 0;
};

// A request's handle: its MPI_Request, or the index of its Pieces in pool_.
struct Handle {
  union {
    MPI_Request mpi;
    uint32_t pieces;
  };
  bool as_pieces;
};
static_assert(sizeof(Handle) <= sizeof(Request::handle));

class MpiTransport final : public Transport {
 public:
  // Messages to or from peer p of at least pieces.bytes go as pieces when
  // pieced_peers[p] (empty: every peer).
  MpiTransport(MPI_Comm comm, int rank, int size, Tag max_tag, MpiPieces pieces,
               std::vector<bool> pieced_peers)
      : Transport(rank, size, max_tag),
        comm_(comm),
        piece_bytes_(pieces.bytes),
        window_(pieces.in_flight > 0 ? pieces.in_flight : SIZE_MAX),
        pieced_peers_(std::move(pieced_peers)),
        sends_(size_t(size)) {}

  const char *name() const override { return "mpi"; }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, false, req));
    if (cut_in_pieces(*req) || has_waiting_pieces(peer)) return post_send_pieces(req);
    handle(req).as_pieces = false;
    Shape shape = shape_of(bytes);
    const int rc = MPI_Isend(buf, shape.count, shape.type, peer, static_cast<int>(tag), comm_,
                             &handle(req).mpi);
    release(shape);
    return posted(rc, "Isend", req);
  }

  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, true, req));
    if (cut_in_pieces(*req)) return post_recv_pieces(req);
    handle(req).as_pieces = false;
    Shape shape = shape_of(bytes);
    const int rc = MPI_Irecv(buf, shape.count, shape.type, peer, static_cast<int>(tag), comm_,
                             &handle(req).mpi);
    release(shape);
    return posted(rc, "Irecv", req);
  }

  Status test(Request *req, bool *done) override {
    advance_sends();
    if (handle(req).as_pieces)
      return req->is_recv ? test_recv_pieces(req, done) : test_send_pieces(req, done);
    *done = false;
    const Status s = test_one(*req, &handle(req).mpi, req->bytes, done);
    if (s != BAGUA_SUCCESS) note_failed_request();
    if (s != BAGUA_SUCCESS || *done) req->active = false;
    return s;
  }

  void abandon(Request *req) override {
    if (!req->active) return;
    req->active = false;
    note_failed_request();
    if (!handle(req).as_pieces) {
      // Sends cannot be reliably cancelled; MPI completes them on its own,
      // reading the message's buffer whenever the peer comes
      // (lib/base/send_memory.hpp).
      if (abandon_one(*req, &handle(req).mpi)) note_abandoned_send(*req);
      return;
    }
    const uint32_t index = handle(req).pieces;
    if (req->is_recv) {
      Pieces &p = pool_[index];
      for (; p.next < p.posted; ++p.next) abandon_one(*req, &p.handles[p.next]);
    } else if (pool_[index].next < pool_[index].handles.size()) {
      drop_send(index);
    }
    free_.push_back(index);
  }

  // A receive of one MPI request: cancelled, and nothing of its peer can
  // come late (a receive in pieces is abandoned).
  void cancel_unmatched(Request *req) override {
    if (!req->active || handle(req).as_pieces) return abandon(req);
    req->active = false;
    abandon_one(*req, &handle(req).mpi);
  }

 private:
  Handle &handle(Request *req) { return *reinterpret_cast<Handle *>(req->handle); }
  bool cut_in_pieces(const Request &req) const {
    return piece_bytes_ > 0 && req.bytes >= piece_bytes_ &&
           (pieced_peers_.empty() || pieced_peers_[size_t(req.peer)]);
  }
  // Pieces of `req`'s message: full ones, then the rest (a message below
  // piece_bytes_ is one piece of its own size).
  size_t piece_count(const Request &req) const { return req.bytes / piece_bytes_ + 1; }
  size_t piece_size(const Request &req, size_t i) const {
    return i < req.bytes / piece_bytes_ ? piece_bytes_ : req.bytes % piece_bytes_;
  }
  unsigned char *piece_at(const Request &req, size_t i) const {
    return static_cast<unsigned char *>(const_cast<void *>(req.buffer)) + i * piece_bytes_;
  }
  bool has_waiting_pieces(int peer) const {
    const std::deque<uint32_t> &q = sends_[size_t(peer)].queue;
    return !q.empty() && pool_[q.back()].posted < pool_[q.back()].handles.size();
  }

  // A fresh Pieces entry for `req`, its index in the request's handle.
  uint32_t new_pieces(Request *req) {
    if (free_.empty()) {
      free_.push_back(static_cast<uint32_t>(pool_.size()));
      pool_.emplace_back();
    }
    const uint32_t index = free_.back();
    free_.pop_back();
    Pieces &p = pool_[index];
    p.request = *req;
    p.handles.assign(piece_count(*req), MPI_REQUEST_NULL);
    p.next = p.posted = 0;
    p.failure = BAGUA_SUCCESS;
    handle(req).as_pieces = true;
    handle(req).pieces = index;
    return index;
  }

  Status post_recv_pieces(Request *req) {
    const uint32_t index = new_pieces(req);
    Pieces &p = pool_[index];
    p.last.resize(piece_bytes_);
    const int tag = static_cast<int>(req->tag);
    for (; p.posted < p.handles.size(); ++p.posted) {
      const size_t i = p.posted;
      const bool bounced = i + 1 == p.handles.size();
      const int count = static_cast<int>(bounced ? piece_bytes_ : piece_size(*req, i));
      const int rc = MPI_Irecv(bounced ? p.last.data() : piece_at(*req, i), count, MPI_BYTE,
                               req->peer, tag, comm_, &p.handles[i]);
      if (rc != MPI_SUCCESS) {
        // Give up the pieces already posted, as after any failed request.
        req->active = true;
        abandon(req);
        return mpi_error(rc, "Irecv", *req);
      }
    }
    req->active = true;
    return BAGUA_SUCCESS;
  }

  // Queues the send behind the peer's others and posts what the window allows.
  Status post_send_pieces(Request *req) {
    const uint32_t index = new_pieces(req);
    sends_[size_t(req->peer)].queue.push_back(index);
    ++queued_sends_;
    post_waiting(req->peer);
    req->active = true;
    if (pool_[index].failure == BAGUA_SUCCESS) return BAGUA_SUCCESS;
    bool unused = false;
    return test_send_pieces(req, &unused);
  }

  // Tests the pieces in order; done once the last one is. A failed piece
  // fails the request and gives up the rest.
  Status test_recv_pieces(Request *req, bool *done) {
    Pieces &p = pool_[handle(req).pieces];
    *done = false;
    for (; p.next < p.handles.size(); ++p.next) {
      bool piece_done = false;
      const Status s = test_one(*req, &p.handles[p.next], piece_size(*req, p.next), &piece_done);
      if (s != BAGUA_SUCCESS) {
        ++p.next;
        abandon(req);
        return s;
      }
      if (!piece_done) return BAGUA_SUCCESS;
    }
    const size_t full = req->bytes / piece_bytes_;
    std::memcpy(piece_at(*req, full), p.last.data(), piece_size(*req, full));
    req->active = false;
    free_.push_back(handle(req).pieces);
    *done = true;
    return BAGUA_SUCCESS;
  }

  // advance_sends retires a send's pieces; done once all are.
  Status test_send_pieces(Request *req, bool *done) {
    const uint32_t index = handle(req).pieces;
    Pieces &p = pool_[index];
    *done = false;
    if (p.failure == BAGUA_SUCCESS && p.next < p.handles.size()) return BAGUA_SUCCESS;
    req->active = false;
    free_.push_back(index);
    if (p.failure != BAGUA_SUCCESS) return fail(p.failure, "%s", p.message.c_str());
    *done = true;
    return BAGUA_SUCCESS;
  }

  // Every test moves every peer's window, so a send waiting for one is
  // posted while its sender waits on something else (a ring step waits on
  // its receive, which the peer's waiting sends feed).
  void advance_sends() {
    if (queued_sends_ == 0) return;
    for (size_t peer = 0; peer < sends_.size(); ++peer)
      if (!sends_[peer].queue.empty()) advance_peer(int(peer));
  }

  // Retires the complete pieces of the peer's oldest sends (pieces on one
  // connection complete in order), dequeues the sends that are done, then
  // posts waiting pieces while the window has room.
  void advance_peer(int peer) {
    PeerSends &s = sends_[size_t(peer)];
    while (!s.queue.empty()) {
      const uint32_t index = s.queue.front();
      Pieces &p = pool_[index];
      int flag = 1;
      while (flag && p.next < p.posted) {
        const int rc = MPI_Test(&p.handles[p.next], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
          fail_send(index, rc, "Test");
          break;
        }
        if (flag) ++p.next, --s.in_flight;
      }
      if (p.failure != BAGUA_SUCCESS) continue;  // fail_send dequeued it
      if (p.next < p.handles.size()) break;
      s.queue.pop_front();
      --queued_sends_;
    }
    post_waiting(peer);
  }

  // Posts the peer's waiting pieces, oldest send first, up to the window.
  void post_waiting(int peer) {
    PeerSends &s = sends_[size_t(peer)];
    size_t i = 0;
    while (i < s.queue.size() && s.in_flight < window_) {
      const uint32_t index = s.queue[i];
      Pieces &p = pool_[index];
      if (p.posted == p.handles.size()) {
        ++i;
        continue;
      }
      const Request &r = p.request;
      const int rc =
          MPI_Isend(piece_at(r, p.posted), static_cast<int>(piece_size(r, p.posted)), MPI_BYTE,
                    peer, static_cast<int>(r.tag), comm_, &p.handles[p.posted]);
      if (rc != MPI_SUCCESS) {
        fail_send(index, rc, "Isend");  // dequeues it: the next one takes index i
        continue;
      }
      ++p.posted;
      ++s.in_flight;
    }
  }

  // Fails a queued send (reported when its request is tested) and drops it.
  void fail_send(uint32_t index, int rc, const char *what) {
    Pieces &p = pool_[index];
    p.failure = mpi_error(rc, what, p.request);
    p.message = last_error_message();
    drop_send(index);
  }

  // Takes a send off its peer's queue: its pieces MPI holds are released
  // (they still read the buffer: lib/base/send_memory.hpp), the waiting
  // ones never leave.
  void drop_send(uint32_t index) {
    Pieces &p = pool_[index];
    PeerSends &s = sends_[size_t(p.request.peer)];
    bool in_flight = false;
    for (size_t i = p.next; i < p.posted; ++i)
      in_flight = abandon_one(p.request, &p.handles[i]) || in_flight;
    s.in_flight -= p.posted - p.next;
    p.next = p.posted = p.handles.size();
    s.queue.erase(std::find(s.queue.begin(), s.queue.end(), index));
    --queued_sends_;
    note_failed_request();
    if (in_flight) note_abandoned_send(p.request);
  }

  // Tests one MPI request of `expected` bytes belonging to `req`.
  static Status test_one(const Request &req, MPI_Request *h, size_t expected, bool *done) {
    int flag = 0;
    MPI_Status st;
    const int rc = MPI_Test(h, &flag, &st);
    if (rc != MPI_SUCCESS) {
      if (rc == MPI_ERR_TRUNCATE || st.MPI_ERROR == MPI_ERR_TRUNCATE)
        return mismatch(req, "a larger message");
      return mpi_error(rc, "Test", req);
    }
    *done = flag != 0;
    if (flag && req.is_recv) {
      MPI_Count received = 0;
      MPI_Get_elements_x(&st, MPI_BYTE, &received);
      if (static_cast<size_t>(received) != expected) return mismatch(req, "another size");
    }
    return BAGUA_SUCCESS;
  }

  // Cancels a receive, or releases a send; true for a send still in flight.
  static bool abandon_one(const Request &req, MPI_Request *h) {
    if (*h == MPI_REQUEST_NULL) return false;
    if (req.is_recv) {
      // A cancelled receive completes promptly; wait to release it.
      MPI_Cancel(h);
      MPI_Wait(h, MPI_STATUS_IGNORE);
      return false;
    }
    MPI_Request_free(h);
    return true;
  }

  static Status posted(int rc, const char *what, Request *req) {
    if (rc != MPI_SUCCESS) return mpi_error(rc, what, *req);
    req->active = true;
    return BAGUA_SUCCESS;
  }

  static Status mismatch(const Request &req, const char *got) {
    return fail(BAGUA_ERR_MISMATCH,
                "expected %zu bytes from rank %d (tag 0x%x) but it sent %s: do all ranks pass "
                "the same count and datatype?",
                req.bytes, req.peer, req.tag, got);
  }

  MPI_Comm comm_;
  const size_t piece_bytes_;
  const size_t window_;  // most pieces of sends to one peer posted at once
  const std::vector<bool> pieced_peers_;
  std::vector<Pieces> pool_;
  std::vector<uint32_t> free_;
  std::vector<PeerSends> sends_;  // by peer
  size_t queued_sends_ = 0;       // entries of all the queues
};

// Open MPI's MCA variables are MPI_T control variables (MPI_T must be
// initialized). Reads `name` into *text (a string variable) or *value (an
// integer one); false if the MPI library has no such variable.
bool read_control_variable(const char *name, std::string *text, unsigned long long *value) {
  int index = 0, count = 0;
  MPI_T_cvar_handle handle;
  if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS ||
      MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS)
    return false;
  int name_len = 0, desc_len = 0, verbosity = 0, bind = 0, scope = 0, type_size = 0;
  MPI_Datatype type;
  MPI_T_enum enumtype;
  MPI_T_cvar_get_info(index, nullptr, &name_len, &verbosity, &type, &enumtype, nullptr, &desc_len,
                      &bind, &scope);
  MPI_Type_size(type, &type_size);
  bool found = false;
  if (type == MPI_CHAR) {
    std::vector<char> buffer(size_t(count) + 1, '\0');
    found = MPI_T_cvar_read(handle, buffer.data()) == MPI_SUCCESS;
    *text = buffer.data();
  } else if (type_size == 4 || type_size == 8) {
    uint32_t v32 = 0;
    uint64_t v64 = 0;
    found =
        MPI_T_cvar_read(handle, type_size == 4 ? static_cast<void *>(&v32) : &v64) == MPI_SUCCESS;
    *value = type_size == 4 ? v32 : v64;
  }
  MPI_T_cvar_handle_free(&handle);
  return found;
}

// Whether an Open MPI component selection ("tcp,self", "^openib,ofi", or
// empty for all) lets `component` be used.
bool component_allowed(std::string_view selection, std::string_view component) {
  if (selection.empty()) return true;
  const bool excluding = selection.front() == '^';
  if (excluding) selection.remove_prefix(1);
  bool listed = false;
  // Each comma-separated name of the list.
  while (!selection.empty() && !listed) {
    const size_t comma = std::min(selection.find(','), selection.size());
    listed = selection.substr(0, comma) == component;
    selection.remove_prefix(std::min(comma + 1, selection.size()));
  }
  return listed != excluding;
}

// The auto setting from Open MPI's variables, read in one MPI_T session.
MpiPieces read_auto_pieces() {
  int level = MPI_THREAD_SINGLE, provided = 0;
  // Ask for the level MPI runs at: Open MPI's MPI_T_init_thread resets
  // MPI_Query_thread's answer to the level it is given.
  MPI_Query_thread(&level);
  if (MPI_T_init_thread(level, &provided) != MPI_SUCCESS) return {};
  std::string pml, btl, unused_text;
  unsigned long long eager_limit = 0, unused = 0;
  const bool tcp = read_control_variable("btl_tcp_eager_limit", &unused_text, &eager_limit);
  read_control_variable("pml", &pml, &unused);
  read_control_variable("btl", &btl, &unused);
  MPI_T_finalize();
  const size_t piece = mpi_transport_piece_bytes_for(eager_limit);
  if (!tcp || piece == 0 || !component_allowed(pml, "ob1") || !component_allowed(btl, "tcp"))
    return {};
  const bool shared_memory = component_allowed(btl, "vader") || component_allowed(btl, "sm");
  return {piece, shared_memory};
}

}  // namespace

size_t mpi_transport_piece_bytes_for(unsigned long long eager_limit) {
  // Headers ob1 and the TCP BTL count against the eager limit. A piece is
  // the rest rounded down to 4 KiB: messages whose wire size ends within
  // about 400 bytes below 64 KiB took 3x as long as 65000-byte ones over
  // TCP on emulated links (doc/benchmarks.md, "Piece size").
  constexpr unsigned long long kHeaderBytes = 128, kPieceAlign = 4096;
  if (eager_limit < kPieceAlign + kHeaderBytes) return 0;
  return static_cast<size_t>((eager_limit - kHeaderBytes) / kPieceAlign * kPieceAlign);
}

MpiPieces mpi_transport_auto_pieces() {
  // MCA variables are fixed once MPI is initialized.
  static const MpiPieces pieces = read_auto_pieces();
  return pieces;
}

Status mpi_transport_create(MPI_Comm comm, MpiPieces pieces, int64_t timeout_ms,
                            std::unique_ptr<Transport> *out) {
  int rank = 0, size = 0, flag = 0;
  int *tag_ub = nullptr;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Predefined attributes live on MPI_COMM_WORLD: communicators made by
  // MPI_Comm_split (unlike MPI_Comm_dup) do not carry them.
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  if (!flag || *tag_ub < static_cast<int>(kMinTagUb))
    return fail(BAGUA_ERR_TRANSPORT,
                "MPI_TAG_UB is %d, below the %d the MPI standard guarantees: this MPI library "
                "is not conforming; use BAGUA_TRANSPORT=ucx or another MPI",
                flag ? *tag_ub : -1, static_cast<int>(kMinTagUb));
  std::vector<bool> pieced_peers;
  if (pieces.bytes > 0 && pieces.remote_only)
    BAGUA_TRY(mpi_peers_on_other_hosts(comm, timeout_ms, &pieced_peers));
  *out = std::make_unique<MpiTransport>(comm, rank, size, static_cast<Tag>(*tag_ub), pieces,
                                        std::move(pieced_peers));
  return BAGUA_SUCCESS;
}

}  // namespace bagua
