// The collective a communicator's setup runs over its group (agreeing on
// settings, exchanging UCX worker addresses): an allgather of bytes. Over
// MPI for communicators of MPI processes (MpiExchange, mpi_bounded.hpp),
// over the caller's out-of-band allgather for bagua_comm_create_oob, over an
// existing transport for the private states of such a communicator
// (lib/core/exchange.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "../base/status.hpp"

namespace bagua {

class Exchange {
 public:
  Exchange(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~Exchange() = default;
  Exchange(const Exchange &) = delete;
  Exchange &operator=(const Exchange &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Collective: every rank's `mine`, concatenated in rank order into *all;
  // rank p's start at (*offsets)[p]. `what` names the step in errors.
  virtual Status allgather(std::span<const char> mine, const char *what, std::vector<char> *all,
                           std::vector<int> *offsets) = 0;

  // Collective: out[i] = max over ranks of in[i]. By default an allgather.
  virtual Status max(std::span<const int64_t> in, std::span<int64_t> out, const char *what);

 private:
  int rank_;
  int size_;
};

}  // namespace bagua
