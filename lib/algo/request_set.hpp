// Owns the requests of one algorithm call. Whatever path the call leaves by,
// requests still in flight are abandoned, so an error return never leaves a
// transfer aimed at freed scratch memory behind.
#pragma once

#include <vector>

#include "../transport/transport.hpp"

namespace bagua {

class RequestSet {
 public:
  // `rows` groups of requests (e.g. one per step), each sized by `row_size(i)`.
  template <class RowSize>
  RequestSet(Transport &t, size_t rows, RowSize row_size) : t_(t), rows_(rows) {
    for (size_t i = 0; i < rows; ++i) rows_[i].resize(row_size(i));
  }
  ~RequestSet() {
    for (auto &row : rows_) abandon_all(t_, row);
  }
  RequestSet(const RequestSet &) = delete;
  RequestSet &operator=(const RequestSet &) = delete;

  std::vector<Request> &row(size_t i) { return rows_[i]; }
  size_t rows() const { return rows_.size(); }

 private:
  Transport &t_;
  std::vector<std::vector<Request>> rows_;
};

}  // namespace bagua
