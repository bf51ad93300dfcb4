#include "cuda_stream.hpp"

#include <map>
#include <mutex>

namespace bagua {
namespace {

// MPI_Comm is a handle: a pointer (Open MPI) or an int (MPICH); both order.
std::mutex streams_mutex;
std::map<MPI_Comm, void *> &streams() {
  static std::map<MPI_Comm, void *> m;
  return m;
}

}  // namespace

void set_cuda_stream(MPI_Comm comm, void *stream) {
  const std::lock_guard<std::mutex> lock(streams_mutex);
  if (stream == nullptr)
    streams().erase(comm);
  else
    streams()[comm] = stream;
}

void *cuda_stream_of(MPI_Comm comm) {
  const std::lock_guard<std::mutex> lock(streams_mutex);
  const auto it = streams().find(comm);
  return it == streams().end() ? nullptr : it->second;
}

}  // namespace bagua
