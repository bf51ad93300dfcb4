// Helpers shared by the multi-process tests.
#pragma once

#include <dirent.h>
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "bagua.h"
#include "half.h"

namespace test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Threads of this process (entries of /proc/self/task).
inline int thread_count() {
  int count = 0;
  if (DIR *dir = opendir("/proc/self/task")) {
    while (dirent *e = readdir(dir)) count += e->d_name[0] != '.';
    closedir(dir);
  }
  return count;
}

// A fresh duplicate of MPI_COMM_WORLD whose bagua state is created with the
// given environment (options are read when a communicator is first used).
class ScopedComm {
 public:
  using Env = std::initializer_list<std::pair<const char *, const char *>>;
  explicit ScopedComm(Env env = {}) {
    for (auto &[k, v] : env) setenv(k, v, 1);
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    // Create the bagua state now, while the environment is in effect.
    float dummy = 0;
    bagua_allreduce(MPI_IN_PLACE, &dummy, 1, MPI_FLOAT, MPI_SUM, comm_);
    for (auto &kv : env) unsetenv(kv.first);
  }
  ~ScopedComm() { MPI_Comm_free(&comm_); }
  ScopedComm(const ScopedComm &) = delete;
  ScopedComm &operator=(const ScopedComm &) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_;
};

// True on every rank iff `ok` on every rank.
inline bool all_ranks(bool ok, MPI_Comm comm = MPI_COMM_WORLD) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  return all == 1;
}

// The call failed with `code` and a message containing `words`.
inline void expect_error(int rc, int code, const char *words) {
  INFO("message: " << bagua_last_error());
  CHECK(rc == code);
  CHECK(std::string(bagua_last_error()).find(words) != std::string::npos);
}

// Element types as (MPI handle, storage conversions).
enum class Type { f32, f64, f16, bf16 };
inline const char *type_name(Type t) {
  const char *names[] = {"float", "double", "float16", "bfloat16"};
  return names[static_cast<int>(t)];
}
inline MPI_Datatype mpi_type(Type t) {
  switch (t) {
    case Type::f32: return MPI_FLOAT;
    case Type::f64: return MPI_DOUBLE;
    case Type::f16: return BAGUA_FLOAT16;
    case Type::bf16: return BAGUA_BFLOAT16;
  }
  return MPI_DATATYPE_NULL;
}
inline size_t type_size(Type t) { return t == Type::f64 ? 8 : t == Type::f32 ? 4 : 2; }

// A buffer of `count` elements of type t, accessed as doubles.
class TypedBuffer {
 public:
  TypedBuffer(Type t, size_t count) : t_(t), bytes_(count * type_size(t) + 8) {}
  void *data() { return bytes_.data(); }
  void set(size_t i, double v) {
    switch (t_) {
      case Type::f32: reinterpret_cast<float *>(data())[i] = float(v); break;
      case Type::f64: reinterpret_cast<double *>(data())[i] = v; break;
      case Type::f16:
        reinterpret_cast<uint16_t *>(data())[i] = bagua::float_to_fp16(float(v));
        break;
      case Type::bf16:
        reinterpret_cast<uint16_t *>(data())[i] = bagua::float_to_bf16(float(v));
        break;
    }
  }
  double get(size_t i) {
    switch (t_) {
      case Type::f32: return reinterpret_cast<float *>(data())[i];
      case Type::f64: return reinterpret_cast<double *>(data())[i];
      case Type::f16: return bagua::fp16_to_float(reinterpret_cast<uint16_t *>(data())[i]);
      case Type::bf16: return bagua::bf16_to_float(reinterpret_cast<uint16_t *>(data())[i]);
    }
    return 0;
  }
  // v rounded the way storing it in type t would.
  static double round(Type t, double v) {
    TypedBuffer one(t, 1);
    one.set(0, v);
    return one.get(0);
  }

 private:
  Type t_;
  std::vector<unsigned char> bytes_;
};

}  // namespace test
