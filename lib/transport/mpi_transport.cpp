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

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, int rank, int size) : Transport(rank, size), comm_(comm) {}

  const char *name() const override { return "mpi"; }

  Status isend(const void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(prepare(bytes, peer, tag, false, req));
    const int rc = MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, peer, static_cast<int>(tag),
                             comm_, &mpi_handle(req));
    return posted(rc, "Isend", req);
  }

  Status irecv(void *buf, size_t bytes, int peer, Tag tag, Request *req) override {
    BAGUA_TRY(prepare(bytes, peer, tag, true, req));
    const int rc = MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, peer, static_cast<int>(tag),
                             comm_, &mpi_handle(req));
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
      int received = 0;
      MPI_Get_count(&st, MPI_BYTE, &received);
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
      // Sends cannot be reliably cancelled; let MPI complete them on its own.
      MPI_Request_free(&h);
    }
  }

 private:
  Status prepare(size_t bytes, int peer, Tag tag, bool is_recv, Request *req) {
    if (bytes > static_cast<size_t>(INT_MAX))
      return fail(BAGUA_ERR_INTERNAL, "message of %zu bytes exceeds MPI's int count", bytes);
    return begin_request(bytes, peer, tag, is_recv, req);
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
  if (!flag || *tag_ub < static_cast<int>(kTagLimit - 1))
    return fail(BAGUA_ERR_TRANSPORT, "MPI_TAG_UB is %d; bagua needs 2^31-1 (use Open MPI)",
                flag ? *tag_ub : -1);
  *out = std::make_unique<MpiTransport>(comm, rank, size);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
