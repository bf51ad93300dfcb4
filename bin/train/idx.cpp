#include "idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace train {
namespace {

constexpr uint8_t kUnsignedByteType = 0x08;
// Refuse headers announcing more than this; Fashion-MNIST's largest file is 47 MB.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 32;
constexpr float kPixelMean = 0.2860f;
constexpr float kPixelStd = 0.3530f;
constexpr const char *kPackageHint =
    "install the Debian package dataset-fashion-mnist (apt-get install dataset-fashion-mnist) "
    "or pass --data DIR";

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw DataError(path + ": " + what);
}

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads exactly `size` bytes; false when the stream ends first.
bool read_exact(const std::string &path, gzFile f, void *out, size_t size) {
  auto *dst = static_cast<unsigned char *>(out);
  while (size > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(size, 1u << 30));
    const int got = gzread(f, dst, chunk);
    if (got < 0) {
      int code = 0;
      const char *msg = gzerror(f, &code);
      fail(path, std::string("corrupt compressed data (") + msg + ")");
    }
    if (got == 0) return false;
    dst += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

uint32_t big_endian32(const unsigned char *p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

IdxArray read_idx(const std::string &path, int expected_rank) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");

  unsigned char magic[4];
  if (!read_exact(path, f.get(), magic, sizeof magic)) fail(path, "truncated: no idx header");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != kUnsignedByteType ||
      magic[3] != expected_rank) {
    char text[96];
    std::snprintf(text, sizeof text,
                  "bad magic number %02x%02x%02x%02x (expected 000008%02x: unsigned bytes, %d "
                  "dimensions)",
                  magic[0], magic[1], magic[2], magic[3], expected_rank, expected_rank);
    fail(path, text);
  }

  IdxArray out;
  uint64_t payload = 1;
  // Header: one big-endian uint32 per dimension.
  for (int d = 0; d < expected_rank; ++d) {
    unsigned char raw[4];
    if (!read_exact(path, f.get(), raw, sizeof raw)) fail(path, "truncated idx header");
    const uint32_t dim = big_endian32(raw);
    if (dim == 0) fail(path, "dimension " + std::to_string(d) + " is 0");
    payload *= dim;
    if (payload > kMaxPayloadBytes) fail(path, "header announces an implausibly large array");
    out.dims.push_back(dim);
  }

  out.values.resize(payload);
  if (!read_exact(path, f.get(), out.values.data(), payload))
    fail(path, "truncated: header announces " + std::to_string(payload) +
                   " bytes of data, the file has fewer");
  unsigned char extra;
  if (read_exact(path, f.get(), &extra, 1))
    fail(path,
         "trailing data after the " + std::to_string(payload) + " bytes the header announces");
  return out;
}

Dataset load_fashion_mnist(const std::string &dir, const std::string &prefix) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  for (const std::string &p : {images_path, labels_path})
    if (!std::filesystem::exists(p))
      throw DataError("Fashion-MNIST not found: " + p + " does not exist; " + kPackageHint);

  const IdxArray images = read_idx(images_path, 3);
  const IdxArray labels = read_idx(labels_path, 1);
  if (images.dims[0] != labels.dims[0])
    throw DataError(images_path + " has " + std::to_string(images.dims[0]) + " images but " +
                    labels_path + " has " + std::to_string(labels.dims[0]) + " labels");

  Dataset out;
  out.rows = static_cast<int>(images.dims[0]);
  out.cols = static_cast<int>(images.dims[1] * images.dims[2]);
  out.labels = labels.values;
  for (size_t i = 0; i < out.labels.size(); ++i)
    if (out.labels[i] > 9)
      fail(labels_path, "label " + std::to_string(out.labels[i]) + " at index " +
                            std::to_string(i) + " is not a class 0..9");
  out.pixels = images.values;
  return out;
}

void Dataset::gather(std::span<const int> indices, float *x, uint8_t *y) const {
  constexpr float kScale = 1.0f / (255.0f * kPixelStd);
  constexpr float kOffset = kPixelMean / kPixelStd;
  for (size_t r = 0; r < indices.size(); ++r) {
    const uint8_t *src = &pixels[size_t(indices[r]) * cols];
    float *dst = x + r * cols;
    for (int c = 0; c < cols; ++c) dst[c] = src[c] * kScale - kOffset;
    y[r] = labels[indices[r]];
  }
}

}  // namespace train
