#include "mpi_hosts.hpp"

#include <cstring>
#include <mutex>
#include <span>
#include <string_view>

#include "mpi_bounded.hpp"

namespace bagua {
namespace {

// A host's identity: a 64-bit FNV-1a hash of its processor name, never 0
// (0 marks a host not yet known).
uint64_t host_id(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : name) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h | 1;
}

uint64_t my_host_id() {
  static const uint64_t id = [] {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    return host_id(std::string_view(name, size_t(length)));
  }();
  return id;
}

// The host of each MPI_COMM_WORLD rank learnt so far (0: not yet).
class KnownHosts {
 public:
  uint64_t of(int world_rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    return world_rank >= 0 && size_t(world_rank) < ids_.size() ? ids_[size_t(world_rank)] : 0;
  }
  void learn(int world_rank, uint64_t id) {
    if (world_rank < 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (ids_.size() <= size_t(world_rank)) ids_.resize(size_t(world_rank) + 1, 0);
    ids_[size_t(world_rank)] = id;
  }

 private:
  std::mutex mutex_;
  std::vector<uint64_t> ids_;
};

KnownHosts &known_hosts() {
  static KnownHosts *hosts = new KnownHosts();  // outlives every communicator
  return *hosts;
}

// MPI_COMM_WORLD's rank of each rank of `comm`; MPI_UNDEFINED for processes
// outside it (spawned or connected ones).
std::vector<int> world_ranks(MPI_Comm comm) {
  MPI_Group group, world;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int size = 0;
  MPI_Group_size(group, &size);
  const size_t n = static_cast<size_t>(size);
  std::vector<int> ranks(n), out(n);
  for (int p = 0; p < size; ++p) ranks[size_t(p)] = p;
  MPI_Group_translate_ranks(group, size, ranks.data(), world, out.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return out;
}

// Every rank's host by its name, learnt for later communicators.
Status exchange_host_names(MPI_Comm comm, int64_t timeout_ms, const std::vector<int> &world,
                           std::vector<uint64_t> *ids) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all;
  std::vector<int> offsets;
  BAGUA_TRY(bounded_allgather_bytes(comm, std::span<const char>(name, size_t(length) + 1),
                                    timeout_ms, "exchanging host names", &all, &offsets));
  ids->resize(offsets.size());
  for (size_t p = 0; p < offsets.size(); ++p) {
    (*ids)[p] = host_id(&all[size_t(offsets[p])]);
    known_hosts().learn(world[p], (*ids)[p]);
  }
  return BAGUA_SUCCESS;
}

}  // namespace

Status mpi_peers_on_other_hosts(MPI_Comm comm, int64_t timeout_ms, std::vector<bool> *out) {
  const std::vector<int> world = world_ranks(comm);
  const uint64_t mine = my_host_id();
  std::vector<uint64_t> ids(world.size());
  bool all_known = true;
  for (size_t p = 0; p < world.size(); ++p) {
    ids[p] = world[p] == MPI_UNDEFINED ? 0 : known_hosts().of(world[p]);
    all_known = all_known && ids[p] != 0;
  }
  // Every rank exchanges names when any rank lacks a peer's host.
  const int64_t lacking = all_known ? 0 : 1;
  int64_t any_lacking = 0;
  BAGUA_TRY(bounded_allreduce_max(comm, std::span<const int64_t>(&lacking, 1),
                                  std::span<int64_t>(&any_lacking, 1), timeout_ms,
                                  "comparing known hosts"));
  if (any_lacking) BAGUA_TRY(exchange_host_names(comm, timeout_ms, world, &ids));
  out->resize(ids.size());
  for (size_t p = 0; p < ids.size(); ++p) (*out)[p] = ids[p] != mine;
  return BAGUA_SUCCESS;
}

}  // namespace bagua
