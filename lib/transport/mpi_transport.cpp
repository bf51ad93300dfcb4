#include "mpi_transport.hpp"

#include <climits>
#include <cstring>

namespace bagua {
namespace {

MPI_Request &mpi_handle(Request *req) {
  static_assert(sizeof(MPI_Request) <= sizeof(req->handle));
  return *reinterpret_cast<MPI_Request *>(req->handle);
}

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

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, int rank, int size, Tag max_tag)
      : Transport(rank, size, max_tag), comm_(comm) {}

  const char *name() const override { return "mpi"; }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, false, req));
    Shape shape = shape_of(bytes);
    const int rc = MPI_Isend(buf, shape.count, shape.type, peer, static_cast<int>(tag), comm_,
                             &mpi_handle(req));
    release(shape);
    return posted(rc, "Isend", req);
  }

  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(begin_request(buf, bytes, peer, tag, true, req));
    Shape shape = shape_of(bytes);
    const int rc = MPI_Irecv(buf, shape.count, shape.type, peer, static_cast<int>(tag), comm_,
                             &mpi_handle(req));
    release(shape);
    return posted(rc, "Irecv", req);
  }

  Status test(Request *req, bool *done) override {
    int flag = 0;
    MPI_Status st;
    const int rc = MPI_Test(&mpi_handle(req), &flag, &st);
    if (rc != MPI_SUCCESS) {
      req->active = false;
      if (rc == MPI_ERR_TRUNCATE || st.MPI_ERROR == MPI_ERR_TRUNCATE)
        return mismatch(*req, "a larger message");
      return mpi_error(rc, "Test", *req);
    }
    *done = flag != 0;
    if (!flag) return BAGUA_SUCCESS;
    req->active = false;
    if (req->is_recv) {
      MPI_Count received = 0;
      MPI_Get_elements_x(&st, MPI_BYTE, &received);
      if (static_cast<size_t>(received) != req->bytes) return mismatch(*req, "another size");
    }
    return BAGUA_SUCCESS;
  }

  void abandon(Request *req) override {
    if (!req->active) return;
    req->active = false;
    MPI_Request &h = mpi_handle(req);
    if (req->is_recv) {
      // A cancelled receive completes promptly; wait to release it.
      MPI_Cancel(&h);
      MPI_Wait(&h, MPI_STATUS_IGNORE);
    } else {
      // Sends cannot be reliably cancelled; MPI completes them on its own,
      // reading their buffer whenever the peer comes (lib/base/send_memory.hpp).
      note_abandoned_send(*req);
      MPI_Request_free(&h);
    }
  }

 private:
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
};

}  // namespace

Status mpi_transport_create(MPI_Comm comm, std::unique_ptr<Transport> *out) {
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
  *out = std::make_unique<MpiTransport>(comm, rank, size, static_cast<Tag>(*tag_ub));
  return BAGUA_SUCCESS;
}

}  // namespace bagua
