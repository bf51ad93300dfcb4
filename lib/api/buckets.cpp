// C entry points of the bucketed communicator and the nonblocking
// collectives.
#include <cstring>

#include "../algo/compressed.hpp"
#include "../base/env.hpp"
#include "../core/bucket_comm.hpp"
#include "../core/nonblocking.hpp"
#include "../core/runtime.hpp"
#include "guard.hpp"
#include "validate.hpp"

struct bagua_bucket_comm {
  std::unique_ptr<bagua::BucketComm> impl;
};

namespace bagua {
namespace {

Status check_handle(const char *fn, const bagua_bucket_comm *bc) {
  if (bc == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: bc is NULL", fn);
  return BAGUA_SUCCESS;
}

// Prefixes the thread's last error with the entry point's name.
Status named(const char *fn, Status s) {
  if (s == BAGUA_SUCCESS) return s;
  return fail(s, "%s: %s", fn, std::string(last_error_message()).c_str());
}

Status algorithm_from_c(const char *fn, const bagua_bucket_algorithm_config &in,
                        BucketAlgorithmChoice *out) {
  // Read as an int: a C caller may pass any value, which is not a valid
  // value of the enum type in C++.
  int algorithm = 0;
  static_assert(sizeof algorithm == sizeof in.algorithm);
  std::memcpy(&algorithm, &in.algorithm, sizeof algorithm);
  switch (algorithm) {
    case BAGUA_BUCKET_ALLREDUCE: out->kind = BucketAlgorithmKind::allreduce; break;
    case BAGUA_BUCKET_ALLREDUCE_Q8: out->kind = BucketAlgorithmKind::allreduce_q8; break;
    case BAGUA_BUCKET_ALLREDUCE_FP16: out->kind = BucketAlgorithmKind::allreduce_fp16; break;
    default:
      return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: algorithm %d is not a bagua_bucket_algorithm",
                  fn, algorithm);
  }
  const Status s = op_from_mpi(in.op, &out->op);
  if (s != BAGUA_SUCCESS) return named(fn, s);
  return BAGUA_SUCCESS;
}

Status config_init(bagua_bucket_config *config) {
  BAGUA_TRY(runtime_ensure());
  if (config == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_bucket_config_init: config is NULL");
  int64_t bytes = 0;
  BAGUA_TRY(env_int("BAGUA_BUCKET_BYTES", 1, int64_t{1} << 40, &bytes));
  config->bucket_bytes = static_cast<size_t>(bytes);
  config->flatten = 0;
  config->algorithm = {BAGUA_BUCKET_ALLREDUCE, runtime_avg_op()};
  return BAGUA_SUCCESS;
}

Status bucket_comm_create(MPI_Comm comm, const bagua_bucket_config *config,
                          bagua_bucket_comm **out) {
  constexpr const char *fn = "bagua_bucket_comm_create";
  if (out == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
  *out = nullptr;
  BAGUA_TRY(runtime_ensure());
  if (comm == MPI_COMM_NULL)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: comm is MPI_COMM_NULL", fn);
  int is_inter = 0;
  if (MPI_Comm_test_inter(comm, &is_inter) != MPI_SUCCESS || is_inter)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: comm is not a valid intra-communicator", fn);
  bagua_bucket_config c;
  BAGUA_TRY(config_init(&c));
  if (config != nullptr) c = *config;
  if (c.bucket_bytes == 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: config->bucket_bytes is 0", fn);
  if (c.flatten != 0 && c.flatten != 1)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: config->flatten is %d, not 0 or 1", fn, c.flatten);
  BucketConfig internal{c.bucket_bytes, c.flatten == 1, {}};
  BAGUA_TRY(algorithm_from_c(fn, c.algorithm, &internal.algorithm));
  auto handle = std::make_unique<bagua_bucket_comm>();
  BAGUA_TRY(BucketComm::create(comm, internal, &handle->impl));
  *out = handle.release();
  return BAGUA_SUCCESS;
}

Status bucket_comm_register(bagua_bucket_comm *bc, void *ptr, int count, MPI_Datatype datatype,
                            int *tensor_id) {
  constexpr const char *fn = "bagua_bucket_comm_register";
  BAGUA_TRY(check_handle(fn, bc));
  if (tensor_id == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: tensor_id is NULL", fn);
  if (count < 0) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: count %d is negative", fn, count);
  if (count > 0 && ptr == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: ptr is NULL with count %d", fn, count);
  DType t;
  BAGUA_TRY(named(fn, dtype_from_mpi(datatype, &t)));
  if (reinterpret_cast<uintptr_t>(ptr) % dtype_size(t) != 0)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: ptr must be aligned to %zu bytes (%s)", fn,
                dtype_size(t), dtype_name(t));
  return bc->impl->register_tensor(ptr, static_cast<size_t>(count), t, tensor_id);
}

Status bucket_comm_finalize(bagua_bucket_comm *bc, void **addrs, int *num_buckets) {
  constexpr const char *fn = "bagua_bucket_comm_finalize_registration";
  BAGUA_TRY(check_handle(fn, bc));
  if (num_buckets == nullptr)
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: num_buckets is NULL", fn);
  return bc->impl->finalize_registration(addrs, num_buckets);
}

Status bucket_comm_set_algorithm(bagua_bucket_comm *bc, int bucket,
                                 const bagua_bucket_algorithm_config *algorithm) {
  constexpr const char *fn = "bagua_bucket_comm_set_algorithm";
  BAGUA_TRY(check_handle(fn, bc));
  if (algorithm == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: algorithm is NULL", fn);
  BucketAlgorithmChoice choice;
  BAGUA_TRY(algorithm_from_c(fn, *algorithm, &choice));
  return named(fn, bc->impl->set_algorithm(bucket, choice));
}

using CollectiveBody = NonblockingComm::Body;

// Validates, then starts `make_body(call, comm)` as a nonblocking call.
template <class MakeBody>
Status start_nonblocking(const char *fn, Channel channel, const void *sendbuf, void *recvbuf,
                         int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                         MPI_Request *request, MakeBody make_body) {
  if (request == nullptr) return fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: request is NULL", fn);
  *request = MPI_REQUEST_NULL;
  ReductionCall call;
  BAGUA_TRY(validate_reduction(fn, sendbuf, recvbuf, count, datatype, op, &call));
  NonblockingComm *c = nullptr;
  BAGUA_TRY(named(fn, NonblockingComm::get(comm, &c)));
  CollectiveBody body;
  BAGUA_TRY(make_body(call, *c, &body));
  return named(fn, c->start(channel, std::move(body), request));
}

Status exact_body(const ReductionCall &call, NonblockingComm &c, CollectiveBody *out) {
  const AllreduceArgs args{call.src, call.dst, call.count, call.dtype, call.op};
  AllreduceAlgo algo = c.options().allreduce_algo;
  if (algo == AllreduceAlgo::automatic)
    algo = call.count * dtype_size(call.dtype) >= c.options().ring_threshold_bytes
               ? AllreduceAlgo::ring
               : AllreduceAlgo::recursive_doubling;
  const bool ring = algo == AllreduceAlgo::ring;
  *out = [args, ring](AlgoContext &ctx) {
    return ring ? allreduce_ring(ctx, args) : allreduce_recursive_doubling(ctx, args);
  };
  return BAGUA_SUCCESS;
}

Status q8_body(const ReductionCall &call, NonblockingComm &c, CollectiveBody *out) {
  if (call.dtype == DType::f64)
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "bagua_iallreduce_q8: datatype must be MPI_FLOAT, BAGUA_FLOAT16 or "
                "BAGUA_BFLOAT16 (got %s)",
                dtype_name(call.dtype));
  if (call.op != ReduceOp::sum && call.op != ReduceOp::avg)
    return fail(BAGUA_ERR_UNSUPPORTED_OP,
                "bagua_iallreduce_q8: op must be MPI_SUM or BAGUA_AVG (got %s)", op_name(call.op));
  const CompressedArgs args{call.src,   call.dtype, call.dst,
                            call.dtype, call.count, call.op == ReduceOp::avg ? c.size() : 1};
  std::shared_ptr<ChunkCodec> codec =
      make_q8_codec(static_cast<uint32_t>(c.options().compressed.codec_block));
  *out = [args, codec](AlgoContext &ctx) { return allreduce_compressed(ctx, *codec, args); };
  return BAGUA_SUCCESS;
}

}  // namespace
}  // namespace bagua

using bagua::guard;

extern "C" int bagua_bucket_config_init(bagua_bucket_config *config) {
  return guard("bagua_bucket_config_init", [&] { return bagua::config_init(config); });
}

extern "C" int bagua_bucket_comm_create(MPI_Comm comm, const bagua_bucket_config *config,
                                        bagua_bucket_comm **out) {
  return guard("bagua_bucket_comm_create",
               [&] { return bagua::bucket_comm_create(comm, config, out); });
}

extern "C" int bagua_bucket_comm_destroy(bagua_bucket_comm *bc) {
  return guard("bagua_bucket_comm_destroy", [&] {
    delete bc;
    return BAGUA_SUCCESS;
  });
}

extern "C" int bagua_bucket_comm_register(bagua_bucket_comm *bc, void *ptr, int count,
                                          MPI_Datatype datatype, int *tensor_id) {
  return guard("bagua_bucket_comm_register",
               [&] { return bagua::bucket_comm_register(bc, ptr, count, datatype, tensor_id); });
}

extern "C" int bagua_bucket_comm_finalize_registration(bagua_bucket_comm *bc, void **tensor_addrs,
                                                       int *num_buckets) {
  return guard("bagua_bucket_comm_finalize_registration",
               [&] { return bagua::bucket_comm_finalize(bc, tensor_addrs, num_buckets); });
}

extern "C" int bagua_bucket_comm_tensor_bucket(bagua_bucket_comm *bc, int tensor_id, int *bucket) {
  constexpr const char *fn = "bagua_bucket_comm_tensor_bucket";
  return guard(fn, [&] {
    BAGUA_TRY(bagua::check_handle(fn, bc));
    if (bucket == nullptr) return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: bucket is NULL", fn);
    return bagua::named(fn, bc->impl->tensor_bucket(tensor_id, bucket));
  });
}

extern "C" int bagua_bucket_comm_set_algorithm(bagua_bucket_comm *bc, int bucket,
                                               const bagua_bucket_algorithm_config *algorithm) {
  return guard("bagua_bucket_comm_set_algorithm",
               [&] { return bagua::bucket_comm_set_algorithm(bc, bucket, algorithm); });
}

extern "C" int bagua_bucket_comm_mark_ready(bagua_bucket_comm *bc, int tensor_id) {
  constexpr const char *fn = "bagua_bucket_comm_mark_ready";
  return guard(fn, [&] {
    BAGUA_TRY(bagua::check_handle(fn, bc));
    return bagua::named(fn, bc->impl->mark_ready(tensor_id));
  });
}

extern "C" int bagua_bucket_comm_wait(bagua_bucket_comm *bc, int bucket) {
  constexpr const char *fn = "bagua_bucket_comm_wait";
  return guard(fn, [&] {
    BAGUA_TRY(bagua::check_handle(fn, bc));
    return bagua::named(fn, bc->impl->wait(bucket));
  });
}

extern "C" int bagua_bucket_comm_test(bagua_bucket_comm *bc, int bucket, int *flag) {
  constexpr const char *fn = "bagua_bucket_comm_test";
  return guard(fn, [&] {
    BAGUA_TRY(bagua::check_handle(fn, bc));
    if (flag == nullptr) return bagua::fail(BAGUA_ERR_INVALID_ARGUMENT, "%s: flag is NULL", fn);
    bool done = false;
    const bagua::Status s = bc->impl->test(bucket, &done);
    *flag = done ? 1 : 0;
    return bagua::named(fn, s);
  });
}

extern "C" int bagua_bucket_comm_wait_all(bagua_bucket_comm *bc) {
  constexpr const char *fn = "bagua_bucket_comm_wait_all";
  return guard(fn, [&] {
    BAGUA_TRY(bagua::check_handle(fn, bc));
    return bagua::named(fn, bc->impl->wait_all());
  });
}

extern "C" int bagua_iallreduce(const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request) {
  constexpr const char *fn = "bagua_iallreduce";
  return guard(fn, [&] {
    return bagua::start_nonblocking(fn, bagua::Channel::allreduce, sendbuf, recvbuf, count,
                                    datatype, op, comm, request, bagua::exact_body);
  });
}

extern "C" int bagua_iallreduce_q8(const void *sendbuf, void *recvbuf, int count,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   MPI_Request *request) {
  constexpr const char *fn = "bagua_iallreduce_q8";
  return guard(fn, [&] {
    return bagua::start_nonblocking(fn, bagua::Channel::allreduce_q8, sendbuf, recvbuf, count,
                                    datatype, op, comm, request, bagua::q8_body);
  });
}
