// The idx/gzip loader accepts well-formed files and rejects corrupt, truncated or inconsistent
// ones with a message naming the file and the problem.
#include <unistd.h>
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "idx.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

// A fresh directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string templ = (fs::temp_directory_path() / "bagua-idx-XXXXXX").string();
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string &name) const { return (fs::path(path_) / name).string(); }
  std::string path() const { return path_; }

 private:
  std::string path_;
};

// An idx header: magic 00 00 08 <rank>, then each dimension big-endian.
Bytes idx_header(std::vector<uint32_t> dims) {
  Bytes out = {0, 0, 0x08, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(d >> shift));
  return out;
}

Bytes concat(Bytes a, const Bytes &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes gzip(const Bytes &raw) {
  uLongf size = compressBound(raw.size()) + 64;
  Bytes out(size);
  z_stream z{};
  // windowBits 15 + 16: gzip wrapper.
  REQUIRE(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  z.next_in = const_cast<Bytef *>(raw.data());
  z.avail_in = uInt(raw.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void write(const std::string &path, const Bytes &bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// Pixels of image i, pixel j: a closed form, so the test knows every value.
uint8_t pixel(int i, int j) { return uint8_t((i * 31 + j * 7) % 256); }

Bytes images_raw(int count, int rows, int cols) {
  Bytes out = idx_header({uint32_t(count), uint32_t(rows), uint32_t(cols)});
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < rows * cols; ++j) out.push_back(pixel(i, j));
  return out;
}

Bytes labels_raw(int count) {
  Bytes out = idx_header({uint32_t(count)});
  for (int i = 0; i < count; ++i) out.push_back(uint8_t(i % 10));
  return out;
}

// Writes a consistent train set of `count` 3x4 images, then lets the test spoil one file.
struct Fixture {
  TempDir dir;
  std::string images = dir.file("train-images-idx3-ubyte.gz");
  std::string labels = dir.file("train-labels-idx1-ubyte.gz");
  Fixture(int count = 5) {
    write(images, gzip(images_raw(count, 3, 4)));
    write(labels, gzip(labels_raw(count)));
  }
  train::Dataset load() const { return train::load_fashion_mnist(dir.path(), "train"); }
};

}  // namespace

TEST_CASE("well-formed files load with the announced shape and values") {
  Fixture f;
  const train::Dataset d = f.load();
  REQUIRE(d.rows == 5);
  REQUIRE(d.cols == 12);
  for (int i = 0; i < 5; ++i) REQUIRE(d.labels[i] == i % 10);

  // gather normalises with Fashion-MNIST's mean and standard deviation.
  const std::vector<int> indices = {3, 1};
  std::vector<float> x(2 * 12);
  std::vector<uint8_t> y(2);
  d.gather(indices, x.data(), y.data());
  REQUIRE(y == std::vector<uint8_t>{3, 1});
  for (int j = 0; j < 12; ++j)
    REQUIRE(x[12 + j] == Approx((pixel(1, j) / 255.0 - 0.2860) / 0.3530).margin(1e-5));
}

TEST_CASE("missing data names the Debian package") {
  TempDir empty;
  REQUIRE_THROWS_WITH(
      train::load_fashion_mnist(empty.path(), "train"),
      Catch::Contains("dataset-fashion-mnist") && Catch::Contains("does not exist"));
}

TEST_CASE("bad magic numbers are rejected") {
  Fixture f;
  SECTION("wrong element type") {
    Bytes raw = images_raw(5, 3, 4);
    raw[2] = 0x0D;  // float instead of unsigned byte
    write(f.images, gzip(raw));
  }
  SECTION("wrong number of dimensions") { write(f.images, gzip(labels_raw(5))); }
  SECTION("not an idx file at all") { write(f.images, gzip(Bytes(64, 'x'))); }
  REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images) && Catch::Contains("bad magic number"));
}

TEST_CASE("truncated files are rejected") {
  Fixture f;
  SECTION("payload shorter than the header announces") {
    Bytes raw = images_raw(5, 3, 4);
    raw.resize(raw.size() - 1);
    write(f.images, gzip(raw));
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images) && Catch::Contains("truncated"));
  }
  SECTION("header cut short") {
    Bytes raw = images_raw(5, 3, 4);
    raw.resize(9);  // magic and part of the first dimension
    write(f.images, gzip(raw));
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images) && Catch::Contains("truncated"));
  }
  SECTION("empty file") {
    write(f.images, {});
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images) && Catch::Contains("truncated"));
  }
  SECTION("compressed stream cut in the middle") {
    Bytes gz = gzip(images_raw(5, 3, 4));
    gz.resize(gz.size() / 2);
    write(f.images, gz);
    REQUIRE_THROWS_AS(f.load(), train::DataError);
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images));
  }
}

TEST_CASE("corrupt compressed data is rejected") {
  Fixture f(200);
  Bytes gz = gzip(images_raw(200, 3, 4));
  // Flip the bytes of the deflate stream after the 10-byte gzip header.
  for (size_t i = 12; i + 8 < gz.size(); i += 3) gz[i] ^= 0xA5;
  write(f.images, gz);
  REQUIRE_THROWS_AS(f.load(), train::DataError);
  REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images));
}

TEST_CASE("inconsistent headers and contents are rejected") {
  Fixture f;
  SECTION("zero dimension") {
    write(f.images, gzip(idx_header({5, 0, 4})));
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains("dimension 1 is 0"));
  }
  SECTION("trailing bytes") {
    write(f.images, gzip(concat(images_raw(5, 3, 4), {1, 2, 3})));
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.images) && Catch::Contains("trailing"));
  }
  SECTION("image and label counts differ") {
    write(f.labels, gzip(labels_raw(4)));
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains("5 images") && Catch::Contains("4 labels"));
  }
  SECTION("label out of range") {
    Bytes raw = labels_raw(5);
    raw.back() = 10;
    write(f.labels, gzip(raw));
    REQUIRE_THROWS_WITH(f.load(), Catch::Contains(f.labels) && Catch::Contains("not a class"));
  }
}
