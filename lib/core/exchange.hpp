// The setup collectives of communicators formed without MPI (doc/transports.md,
// "Without an MPI launcher"): over the caller's out-of-band allgather, and
// over an existing transport for the private states of such a communicator.
#pragma once

#include <bagua.h>

#include "../algo/context.hpp"
#include "../transport/exchange.hpp"

namespace bagua {

// Over `oob` (checked by the caller), valid while the caller's callback is:
// during bagua_comm_create_oob only.
class OobExchange final : public Exchange {
 public:
  explicit OobExchange(const bagua_oob &oob) : Exchange(oob.rank, oob.size), oob_(oob) {}
  Status allgather(std::span<const char> mine, const char *what, std::vector<char> *all,
                   std::vector<int> *offsets) override;

 private:
  // One call of the callback: `bytes` from every rank into recv.
  Status gather(const void *send, void *recv, size_t bytes, const char *what);
  // Every rank's length (and a check of the ranks' places).
  Status gather_lengths(size_t length, const char *what, std::vector<size_t> *lengths);

  const bagua_oob &oob_;
};

// Over `transport` (used by no other thread meanwhile), in the tags of one
// call, bounded by `deadline`.
class TransportExchange final : public Exchange {
 public:
  TransportExchange(Transport &transport, CallTags tags, Deadline deadline)
      : Exchange(transport.rank(), transport.size()),
        transport_(transport),
        tags_(tags),
        deadline_(deadline) {}
  Status allgather(std::span<const char> mine, const char *what, std::vector<char> *all,
                   std::vector<int> *offsets) override;

 private:
  // Sends `mine` to every other rank and receives rank p's bytes into
  // `all` at offsets[p] (lengths[p] of them), in the tag of `step`.
  Status to_all(std::span<const char> mine, uint32_t step, std::span<char> all,
                std::span<const size_t> offsets, std::span<const size_t> lengths);
  // allgather, its errors not yet naming the step.
  Status gather_all(std::span<const char> mine, std::vector<char> *all, std::vector<int> *offsets);

  Transport &transport_;
  CallTags tags_;
  Deadline deadline_;
};

}  // namespace bagua
