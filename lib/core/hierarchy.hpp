// The two-level layout of hierarchical mode: the ranks of this rank's node,
// and (on node leaders only) one rank per node. Created once per
// communicator, on the first hierarchical call, and freed with it.
#pragma once

#include <mpi.h>

#include <memory>

#include "../base/status.hpp"

namespace bagua {

class Communicator;

class Hierarchy {
 public:
  // Collective over `parent`. node_size 0: nodes are the ranks that share
  // memory (MPI_COMM_TYPE_SHARED); k > 0: groups of k consecutive ranks.
  static Status create(MPI_Comm parent, int node_size, std::unique_ptr<Hierarchy> *out);
  ~Hierarchy();
  Hierarchy(const Hierarchy &) = delete;
  Hierarchy &operator=(const Hierarchy &) = delete;

  // This rank's node; its rank 0 is the leader.
  Communicator &node() const { return *node_; }
  bool is_leader() const { return leaders_ != nullptr; }
  // The node leaders, one per node (leaders only).
  Communicator &leaders() const { return *leaders_; }

 private:
  Hierarchy() = default;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  MPI_Comm leader_comm_ = MPI_COMM_NULL;
  Communicator *node_ = nullptr;
  Communicator *leaders_ = nullptr;
};

}  // namespace bagua
