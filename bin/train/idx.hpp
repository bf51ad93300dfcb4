// Reader of the idx format (as used by MNIST and Fashion-MNIST), gzip-compressed or not.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace train {

// Thrown for missing, truncated or malformed data files; what() names the file and the problem.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An idx file of unsigned bytes: dims[0] items, each of product(dims[1..]) bytes.
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> values;
};

// Reads `path` (gzip or plain), checks the magic number (0x0000 08 0D: unsigned byte,
// `expected_rank` dimensions), that no dimension is 0, and that the payload has exactly the
// number of bytes the header announces.
IdxArray read_idx(const std::string &path, int expected_rank);

// A labelled image set: raw pixels (rows x cols bytes) and labels 0..9.
struct Dataset {
  int rows = 0;
  int cols = 0;  // pixels per image
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;

  // Images `indices` as normalised float rows (Fashion-MNIST's mean and standard deviation)
  // into x, and their labels into y.
  void gather(std::span<const int> indices, float *x, uint8_t *y) const;
};

// Loads `<dir>/<prefix>-images-idx3-ubyte.gz` and `<dir>/<prefix>-labels-idx1-ubyte.gz`
// (prefix "train" or "t10k"), checks that the counts agree and labels are < 10. Missing files
// raise a DataError that names the Debian package to install.
Dataset load_fashion_mnist(const std::string &dir, const std::string &prefix);

}  // namespace train
