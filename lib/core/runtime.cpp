#include "runtime.hpp"

#include <map>
#include <mutex>
#include <string>

#include "../algo/reduce.hpp"
#include "../transport/mpi_bounded.hpp"
#include "comm.hpp"

namespace bagua {
namespace {

struct Handles {
  bool ready = false;
  MPI_Datatype float16 = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat16 = MPI_DATATYPE_NULL;
  MPI_Op avg = MPI_OP_NULL;
  int comm_keyval = MPI_KEYVAL_INVALID;
  int setup_failed_keyval = MPI_KEYVAL_INVALID;
  int finalize_keyval = MPI_KEYVAL_INVALID;
};

std::mutex mutex;
Handles handles;
// Live states and the user communicator each is an attribute of.
std::map<Communicator *, MPI_Comm> live;

// MPI user function of bagua_op_avg: a sum (MPI cannot tell it the group size).
void avg_as_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  DType t = DType::f32;
  if (dtype_from_mpi(*type, &t) == BAGUA_SUCCESS)
    reduce_combine(inout, inout, in, static_cast<size_t>(*len), t, ReduceOp::sum);
}

// Attribute delete callback on the user's communicator.
int delete_comm_state(MPI_Comm, int, void *value, void *) {
  auto *c = static_cast<Communicator *>(value);
  if (registry_remove(c)) delete c;
  return MPI_SUCCESS;
}

// Attribute delete callback of a failed setup's message.
int delete_setup_failure(MPI_Comm, int, void *value, void *) {
  delete static_cast<std::string *>(value);
  return MPI_SUCCESS;
}

// Runs first inside MPI_Finalize (attributes of MPI_COMM_SELF are deleted
// before anything else is torn down).
int on_finalize(MPI_Comm, int, void *, void *) {
  std::map<Communicator *, MPI_Comm> states;
  {
    std::lock_guard lock(mutex);
    states.swap(live);
  }
  for (const auto &state : states) delete state.first;
  bounded_release_completed();
  std::lock_guard lock(mutex);
  MPI_Type_free(&handles.float16);
  MPI_Type_free(&handles.bfloat16);
  MPI_Op_free(&handles.avg);
  MPI_Comm_free_keyval(&handles.comm_keyval);
  MPI_Comm_free_keyval(&handles.setup_failed_keyval);
  MPI_Comm_free_keyval(&handles.finalize_keyval);
  handles = Handles{};
  return MPI_SUCCESS;
}

MPI_Datatype make_two_byte_type() {
  MPI_Datatype t;
  MPI_Type_contiguous(2, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}

}  // namespace

Status runtime_ensure() {
  BAGUA_TRY(check_mpi_initialized());
  std::lock_guard lock(mutex);
  if (handles.ready) return BAGUA_SUCCESS;
  handles.float16 = make_two_byte_type();
  handles.bfloat16 = make_two_byte_type();
  MPI_Type_set_name(handles.float16, "bagua_float16");
  MPI_Type_set_name(handles.bfloat16, "bagua_bfloat16");
  MPI_Op_create(&avg_as_sum, 1, &handles.avg);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_comm_state, &handles.comm_keyval, nullptr);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &delete_setup_failure, &handles.setup_failed_keyval,
                         nullptr);
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &on_finalize, &handles.finalize_keyval, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, handles.finalize_keyval, nullptr);
  handles.ready = true;
  return BAGUA_SUCCESS;
}

MPI_Datatype runtime_float16() { return handles.float16; }
MPI_Datatype runtime_bfloat16() { return handles.bfloat16; }
MPI_Op runtime_avg_op() { return handles.avg; }
int runtime_comm_keyval() { return handles.comm_keyval; }

void runtime_mark_setup_failed(MPI_Comm user_comm, const char *message) {
  MPI_Comm_set_attr(user_comm, handles.setup_failed_keyval, new std::string(message));
}

Status runtime_check_setup_usable(MPI_Comm user_comm) {
  void *value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(user_comm, handles.setup_failed_keyval, &value, &found);
  if (!found) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_COMM_BROKEN,
              "an earlier bagua call's setup on this communicator failed, so bagua no longer "
              "uses it (use a new communicator): %s",
              static_cast<std::string *>(value)->c_str());
}

Status dtype_from_mpi(MPI_Datatype datatype, DType *out) {
  if (datatype == MPI_FLOAT)
    *out = DType::f32;
  else if (datatype == MPI_DOUBLE)
    *out = DType::f64;
  else if (datatype != MPI_DATATYPE_NULL && datatype == handles.float16)
    *out = DType::f16;
  else if (datatype != MPI_DATATYPE_NULL && datatype == handles.bfloat16)
    *out = DType::bf16;
  else
    return fail(BAGUA_ERR_UNSUPPORTED_DATATYPE,
                "datatype is not MPI_FLOAT, MPI_DOUBLE, BAGUA_FLOAT16 or BAGUA_BFLOAT16");
  return BAGUA_SUCCESS;
}

Status op_from_mpi(MPI_Op op, ReduceOp *out) {
  if (op == MPI_SUM)
    *out = ReduceOp::sum;
  else if (op == MPI_MAX)
    *out = ReduceOp::max;
  else if (op == MPI_MIN)
    *out = ReduceOp::min;
  else if (op == MPI_PROD)
    *out = ReduceOp::prod;
  else if (op != MPI_OP_NULL && op == handles.avg)
    *out = ReduceOp::avg;
  else
    return fail(BAGUA_ERR_UNSUPPORTED_OP,
                "op is not MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD or BAGUA_AVG");
  return BAGUA_SUCCESS;
}

MPI_Datatype datatype_to_mpi(DType t) {
  switch (t) {
    case DType::f64: return MPI_DOUBLE;
    case DType::f16: return handles.float16;
    case DType::bf16: return handles.bfloat16;
    case DType::f32: break;
  }
  return MPI_FLOAT;
}

void registry_add(Communicator *c, MPI_Comm user_comm) {
  std::lock_guard lock(mutex);
  live.emplace(c, user_comm);
}

bool registry_remove(Communicator *c) {
  std::lock_guard lock(mutex);
  return live.erase(c) == 1;
}

Status runtime_finalize() {
  BAGUA_TRY(check_mpi_initialized());
  std::map<Communicator *, MPI_Comm> states;
  int comm_keyval = MPI_KEYVAL_INVALID, finalize_keyval = MPI_KEYVAL_INVALID;
  {
    std::lock_guard lock(mutex);
    if (!handles.ready) return BAGUA_SUCCESS;
    states = live;
    comm_keyval = handles.comm_keyval;
    finalize_keyval = handles.finalize_keyval;
  }
  // Each state goes as when its communicator is freed: deleting the
  // attribute runs delete_comm_state, which stops the state's threads.
  for (const auto &[c, user_comm] : states) MPI_Comm_delete_attr(user_comm, comm_keyval);
  // Then the process-wide handles, as at MPI_Finalize (on_finalize).
  MPI_Comm_delete_attr(MPI_COMM_SELF, finalize_keyval);
  return BAGUA_SUCCESS;
}

}  // namespace bagua

extern "C" MPI_Datatype bagua_type_float16(void) {
  return bagua::runtime_ensure() == BAGUA_SUCCESS ? bagua::runtime_float16() : MPI_DATATYPE_NULL;
}

extern "C" MPI_Datatype bagua_type_bfloat16(void) {
  return bagua::runtime_ensure() == BAGUA_SUCCESS ? bagua::runtime_bfloat16() : MPI_DATATYPE_NULL;
}

extern "C" MPI_Op bagua_op_avg(void) {
  return bagua::runtime_ensure() == BAGUA_SUCCESS ? bagua::runtime_avg_op() : MPI_OP_NULL;
}
