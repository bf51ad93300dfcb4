#include "hierarchy.hpp"

#include "comm.hpp"

namespace bagua {
namespace {

Status split_nodes(MPI_Comm parent, int node_size, MPI_Comm *node) {
  int rank = 0;
  MPI_Comm_rank(parent, &rank);
  const int rc = node_size > 0
                     ? MPI_Comm_split(parent, rank / node_size, rank, node)
                     : MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node);
  if (rc != MPI_SUCCESS) return fail(BAGUA_ERR_TRANSPORT, "hierarchical: splitting nodes failed");
  return BAGUA_SUCCESS;
}

}  // namespace

Hierarchy::~Hierarchy() {
  // Freeing a communicator releases its bagua state (attribute callback).
  if (leader_comm_ != MPI_COMM_NULL) MPI_Comm_free(&leader_comm_);
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
}

Status Hierarchy::create(MPI_Comm parent, int node_size, std::unique_ptr<Hierarchy> *out) {
  std::unique_ptr<Hierarchy> h(new Hierarchy());
  BAGUA_TRY(split_nodes(parent, node_size, &h->node_comm_));
  int node_rank = 0, rank = 0;
  MPI_Comm_rank(h->node_comm_, &node_rank);
  MPI_Comm_rank(parent, &rank);
  if (MPI_Comm_split(parent, node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &h->leader_comm_) !=
      MPI_SUCCESS)
    return fail(BAGUA_ERR_TRANSPORT, "hierarchical: splitting node leaders failed");
  BAGUA_TRY(Communicator::get(h->node_comm_, &h->node_));
  if (h->leader_comm_ != MPI_COMM_NULL) BAGUA_TRY(Communicator::get(h->leader_comm_, &h->leaders_));
  *out = std::move(h);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
