// C entry points of the bucketed communicator.
#include <cstddef>
#include <cstring>
#include <string>

#include "../base/env.hpp"
#include "../core/bucket_comm.hpp"
#include "../core/runtime.hpp"
#include "../core/support.hpp"
#include "guard.hpp"

struct bagua_bucket_comm_s {
  std::unique_ptr<bagua::BucketComm> impl;
};

namespace bagua {
namespace {

Status check_handle(const bagua_bucket_comm_s *bc) {
  if (bc == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "bc is NULL");
  return BAGUA_SUCCESS;
}

// Runs `body` on the handle's implementation after checking the handle.
template <class Body>
int with_handle(const char *fn, bagua_bucket_comm_t bc, Body body) {
  return guard(fn, [&] {
    BAGUA_TRY(check_handle(bc));
    return body(*bc->impl);
  });
}

Status algorithm_from_c(const bagua_bucket_algorithm_config &in, BucketAlgorithmChoice *out) {
  // Read as an int: a C caller may pass any value, which is not a valid
  // value of the enum type in C++.
  const int algorithm = static_cast<int>(in.algorithm);
  if (!offers(Family::bucket, Wire(algorithm))) {
    std::string names;
    for (const WireInfo &w : wires())
      if (offers(Family::bucket, w.id)) names += (names.empty() ? "" : ", ") + std::string(w.name);
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "algorithm %d is not a bucket algorithm (%s)",
                algorithm, names.c_str());
  }
  out->wire = Wire(algorithm);
  if (in.op == MPI_OP_NULL) {
    out->op = ReduceOp::avg;
    return BAGUA_SUCCESS;
  }
  BAGUA_TRY(op_from_mpi(in.op, &out->op));
  // An op no bucket algorithm offers (the exact one offers most) fails here,
  // not at the first bucket.
  return check_op(Family::bucket, Wire::exact, out->op);
}

Status config_init(bagua_bucket_config *config) {
  BAGUA_TRY(runtime_ensure());
  if (config == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "config is NULL");
  int64_t bytes = 0;
  BAGUA_TRY(env_int("BAGUA_BUCKET_BYTES", &bytes));
  int64_t automatic = 0;
  BAGUA_TRY(env_int("BAGUA_BUCKET_AUTO", &automatic));
  *config = BAGUA_BUCKET_CONFIG_INITIALIZER;
  config->bucket_bytes = static_cast<size_t>(bytes);
  config->auto_bucket_bytes = static_cast<int>(automatic);
  config->algorithm.op = runtime_avg_op();
  return BAGUA_SUCCESS;
}

// The sizes of bagua_bucket_config this library knows: the current one and
// the one before auto_bucket_bytes was appended.
constexpr size_t kConfigBeforeAuto = offsetof(bagua_bucket_config, auto_bucket_bytes);

// The caller's config over the defaults, as many bytes as the caller knows.
Status read_config(const bagua_bucket_config *config, bagua_bucket_config *c) {
  BAGUA_TRY(config_init(c));
  if (config == nullptr) return BAGUA_SUCCESS;
  if (config->struct_size != sizeof(bagua_bucket_config) &&
      config->struct_size != kConfigBeforeAuto)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "config->struct_size is %zu, not sizeof(bagua_bucket_config) = %zu; fill the "
                "config with bagua_bucket_config_init or BAGUA_BUCKET_CONFIG_INITIALIZER",
                config->struct_size, sizeof(bagua_bucket_config));
  if (config->struct_size == kConfigBeforeAuto) c->auto_bucket_bytes = 0;
  std::memcpy(c, config, config->struct_size);
  c->struct_size = sizeof(bagua_bucket_config);
  return BAGUA_SUCCESS;
}

Status check_config(const bagua_bucket_config &c) {
  if (c.bucket_bytes == 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "config->bucket_bytes is 0");
  if (c.flatten != 0 && c.flatten != 1)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "config->flatten is %d, not 0 or 1", c.flatten);
  if (c.auto_bucket_bytes != 0 && c.auto_bucket_bytes != 1)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "config->auto_bucket_bytes is %d, not 0 or 1",
                c.auto_bucket_bytes);
  if (c.auto_bucket_bytes == 1 && c.flatten == 1)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "config->auto_bucket_bytes needs flatten 0: flattened tensors cannot move to "
                "the buckets of another size");
  return BAGUA_SUCCESS;
}

Status bucket_comm_create(MPI_Comm comm, const bagua_bucket_config *config,
                          bagua_bucket_comm_t *out) {
  if (out == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  BAGUA_TRY(runtime_ensure());
  if (comm == MPI_COMM_NULL) return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is MPI_COMM_NULL");
  int is_inter = 0;
  if (MPI_Comm_test_inter(comm, &is_inter) != MPI_SUCCESS || is_inter)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "comm is not a valid intra-communicator");
  bagua_bucket_config c;
  BAGUA_TRY(read_config(config, &c));
  BAGUA_TRY(check_config(c));
  BucketConfig internal{c.bucket_bytes, c.flatten == 1, {}, c.auto_bucket_bytes == 1};
  BAGUA_TRY(algorithm_from_c(c.algorithm, &internal.algorithm));
  auto handle = std::make_unique<bagua_bucket_comm_s>();
  BAGUA_TRY(BucketComm::create(comm, internal, &handle->impl));
  *out = handle.release();
  return BAGUA_SUCCESS;
}

Status bucket_comm_register(BucketComm &bc, void *ptr, int count, MPI_Datatype datatype,
                            int *tensor_id) {
  if (tensor_id == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "tensor_id is NULL");
  Call call;
  BAGUA_TRY(describe_buffer(Family::bucket, Wire::exact, "ptr", ptr, count, datatype, MPI_COMM_NULL,
                            &call));
  return bc.register_tensor(ptr, call.count, call.dtype, call.memory, tensor_id);
}

Status bucket_comm_set_algorithm(BucketComm &bc, int bucket,
                                 const bagua_bucket_algorithm_config *algorithm) {
  if (algorithm == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "algorithm is NULL");
  BucketAlgorithmChoice choice;
  BAGUA_TRY(algorithm_from_c(*algorithm, &choice));
  return bc.set_algorithm(bucket, choice);
}

}  // namespace
}  // namespace bagua

using bagua::BucketComm;
using bagua::guard;
using bagua::with_handle;

extern "C" int bagua_bucket_config_init(bagua_bucket_config *config) {
  return guard("bagua_bucket_config_init", [&] { return bagua::config_init(config); });
}

extern "C" int bagua_bucket_comm_create(MPI_Comm comm, const bagua_bucket_config *config,
                                        bagua_bucket_comm_t *out) {
  return guard("bagua_bucket_comm_create",
               [&] { return bagua::bucket_comm_create(comm, config, out); });
}

extern "C" int bagua_bucket_comm_destroy(bagua_bucket_comm_t *bc) {
  return guard("bagua_bucket_comm_destroy", [&] {
    if (bc != nullptr) {
      delete *bc;
      *bc = nullptr;
    }
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_bucket_comm_register(bagua_bucket_comm_t bc, void *ptr, int count,
                                          MPI_Datatype datatype, int *tensor_id) {
  return with_handle("bagua_bucket_comm_register", bc, [&](BucketComm &b) {
    return bagua::bucket_comm_register(b, ptr, count, datatype, tensor_id);
  });
}

extern "C" int bagua_bucket_comm_finalize_registration(bagua_bucket_comm_t bc, void **tensor_addrs,
                                                       int *num_buckets) {
  return with_handle("bagua_bucket_comm_finalize_registration", bc, [&](BucketComm &b) {
    if (num_buckets == nullptr)
      return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "num_buckets is NULL");
    return b.finalize_registration(tensor_addrs, num_buckets);
  });
}

extern "C" int bagua_bucket_comm_tensor_bucket(bagua_bucket_comm_t bc, int tensor_id, int *bucket) {
  return with_handle("bagua_bucket_comm_tensor_bucket", bc, [&](BucketComm &b) {
    if (bucket == nullptr) return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "bucket is NULL");
    return b.tensor_bucket(tensor_id, bucket);
  });
}

extern "C" int bagua_bucket_comm_set_algorithm(bagua_bucket_comm_t bc, int bucket,
                                               const bagua_bucket_algorithm_config *algorithm) {
  return with_handle("bagua_bucket_comm_set_algorithm", bc, [&](BucketComm &b) {
    return bagua::bucket_comm_set_algorithm(b, bucket, algorithm);
  });
}

extern "C" int bagua_bucket_comm_mark_ready(bagua_bucket_comm_t bc, int tensor_id) {
  return with_handle("bagua_bucket_comm_mark_ready", bc,
                     [&](BucketComm &b) { return b.mark_ready(tensor_id); });
}

extern "C" int bagua_bucket_comm_wait(bagua_bucket_comm_t bc, int bucket) {
  return with_handle("bagua_bucket_comm_wait", bc, [&](BucketComm &b) { return b.wait(bucket); });
}

extern "C" int bagua_bucket_comm_test(bagua_bucket_comm_t bc, int bucket, int *flag) {
  return with_handle("bagua_bucket_comm_test", bc, [&](BucketComm &b) {
    if (flag == nullptr) return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "flag is NULL");
    bool done = false;
    const bagua::Status s = b.test(bucket, &done);
    *flag = done ? 1 : 0;
    return s;
  });
}

extern "C" int bagua_bucket_comm_wait_all(bagua_bucket_comm_t bc) {
  return with_handle("bagua_bucket_comm_wait_all", bc, [&](BucketComm &b) { return b.wait_all(); });
}
