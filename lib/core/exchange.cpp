#include "exchange.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

namespace bagua {
namespace {

// Rank p's bytes start at the sum of the lengths before it.
std::vector<size_t> starts(std::span<const size_t> lengths) {
  std::vector<size_t> out(lengths.size(), 0);
  std::exclusive_scan(lengths.begin(), lengths.end(), out.begin(), size_t{0});
  return out;
}

std::vector<int> as_int(std::span<const size_t> v) { return {v.begin(), v.end()}; }

}  // namespace

Status OobExchange::gather(const void *send, void *recv, size_t bytes, const char *what) {
  const int rc = oob_.allgather(send, recv, bytes, oob_.ctx);
  if (rc != 0)
    return fail(BAGUA_ERR_TRANSPORT,
                "%s: the out-of-band allgather (bagua_oob.allgather) failed (%d)", what, rc);
  return BAGUA_SUCCESS;
}

// Every rank's rank and length: a place holding another rank's (the same
// on every rank) means duplicate ranks or a callback out of rank order.
Status OobExchange::gather_lengths(size_t length, const char *what, std::vector<size_t> *lengths) {
  const size_t mine[2] = {size_t(rank()), length};
  std::vector<size_t> all(2 * size_t(size()));
  BAGUA_TRY(gather(mine, all.data(), sizeof mine, what));
  lengths->resize(size_t(size()));
  for (size_t p = 0; p < lengths->size(); ++p) {
    if (all[2 * p] != p)
      return fail(BAGUA_ERR_INVALID_ARGUMENT,
                  "%s: the out-of-band allgather put rank %zu's bytes at rank %zu's place: "
                  "oob->rank must differ on every rank and the callback gather in rank order",
                  what, all[2 * p], p);
    (*lengths)[p] = all[2 * p + 1];
  }
  return BAGUA_SUCCESS;
}

// Two calls of the fixed-size callback: every rank's length, then every
// rank's bytes padded to the longest.
Status OobExchange::allgather(std::span<const char> mine, const char *what, std::vector<char> *all,
                              std::vector<int> *offsets) {
  std::vector<size_t> lengths;
  BAGUA_TRY(gather_lengths(mine.size(), what, &lengths));
  const size_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<char> padded(longest, 0), gathered(longest * lengths.size());
  std::copy(mine.begin(), mine.end(), padded.begin());
  BAGUA_TRY(gather(padded.data(), gathered.data(), longest, what));
  all->clear();
  for (size_t p = 0; p < lengths.size(); ++p)
    all->insert(all->end(), gathered.begin() + std::ptrdiff_t(p * longest),
                gathered.begin() + std::ptrdiff_t(p * longest + lengths[p]));
  *offsets = as_int(starts(lengths));
  return BAGUA_SUCCESS;
}

Status TransportExchange::to_all(std::span<const char> mine, uint32_t step, std::span<char> all,
                                 std::span<const size_t> offsets, std::span<const size_t> lengths) {
  // Sends abandoned after a failure may still read their bytes.
  const Bytes sent(mine.begin(), mine.end());
  std::vector<Request> reqs(2 * size_t(size()));
  Status s = BAGUA_SUCCESS;
  for (int p = 0; p < size() && s == BAGUA_SUCCESS; ++p) {
    if (p == rank()) continue;
    const auto q = size_t(p);
    s = transport_.irecv(all.data() + offsets[q], lengths[q], p, tags_.at(step), &reqs[2 * q]);
    if (s == BAGUA_SUCCESS)
      s = transport_.isend(sent.data(), sent.size(), p, tags_.at(step), &reqs[2 * q + 1]);
  }
  if (s != BAGUA_SUCCESS) {
    abandon_all(transport_, reqs);
    return s;
  }
  std::copy(mine.begin(), mine.end(), all.begin() + std::ptrdiff_t(offsets[size_t(rank())]));
  return wait_all(transport_, reqs, deadline_);
}

Status TransportExchange::allgather(std::span<const char> mine, const char *what,
                                    std::vector<char> *all, std::vector<int> *offsets) {
  const Status s = gather_all(mine, all, offsets);
  if (s == BAGUA_SUCCESS) return s;
  return fail(s, "%s: %s", what, std::string(last_error_message()).c_str());
}

// Every rank's length, then every rank's bytes.
Status TransportExchange::gather_all(std::span<const char> mine, std::vector<char> *all,
                                     std::vector<int> *offsets) {
  const size_t length = mine.size();
  const auto n = size_t(size());
  std::vector<size_t> lengths(n), length_offsets(n), length_lengths(n, sizeof length);
  for (size_t p = 0; p < n; ++p) length_offsets[p] = p * sizeof length;
  BAGUA_TRY(to_all({reinterpret_cast<const char *>(&length), sizeof length}, 0,
                   {reinterpret_cast<char *>(lengths.data()), n * sizeof length}, length_offsets,
                   length_lengths));
  const std::vector<size_t> at = starts(lengths);
  all->assign(at.back() + lengths.back(), 0);
  BAGUA_TRY(to_all(mine, 1, *all, at, lengths));
  *offsets = as_int(at);
  return BAGUA_SUCCESS;
}

}  // namespace bagua
