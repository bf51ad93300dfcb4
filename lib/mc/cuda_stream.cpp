#include "cuda_stream.hpp"

#include <mutex>

namespace bagua {
namespace {

// The stream is an attribute of the communicator: MPI drops it with the
// communicator, so a handle value MPI reuses for a new one starts without
// it. bagua does not own the stream (nothing to free on deletion).
int stream_keyval() {
  static int keyval = MPI_KEYVAL_INVALID;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &keyval, nullptr);
  });
  return keyval;
}

}  // namespace

void set_cuda_stream(MPI_Comm comm, void *stream) {
  // Deleting an attribute comm does not hold is an error in MPI.
  if (stream != nullptr)
    MPI_Comm_set_attr(comm, stream_keyval(), stream);
  else if (cuda_stream_of(comm) != nullptr)
    MPI_Comm_delete_attr(comm, stream_keyval());
}

void *cuda_stream_of(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return nullptr;
  void *stream = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm, stream_keyval(), &stream, &found);
  return found ? stream : nullptr;
}

}  // namespace bagua
