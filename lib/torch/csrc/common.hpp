// Shared by the two files of bagua_torch._C: communicators, bagua errors,
// tensor checks and the allreduce algorithms, on bagua's public C API only.
#pragma once

#include <bagua.h>
#include <torch/extension.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace bagua_torch {

// A failed bagua call: what was called, the status code, bagua_error_string
// and bagua_last_error (read on the thread that made the call).
class BaguaError : public std::runtime_error {
 public:
  BaguaError(const std::string &call, int code);
  // A failure another thread saw, with its bagua_last_error() text.
  BaguaError(const std::string &call, int code, const std::string &last_error);
  int code() const { return code_; }
  const std::string &error_string() const { return error_string_; }
  const std::string &last_error() const { return last_error_; }

 private:
  int code_;
  std::string error_string_;
  std::string last_error_;
};

// Throws BaguaError(call, rc) unless rc is BAGUA_SUCCESS.
void check_status(int rc, const char *call);
// Throws std::runtime_error naming `call` unless rc is MPI_SUCCESS.
void check_mpi(int rc, const char *call);

// An MPI communicator, freed (if this object owns it) when the last user lets
// go, unless MPI is already finalised; or one bagua formed without an MPI
// launcher (bagua_comm_create_oob, from_store), whose rank and size are the
// group's and which MPI itself sees as one rank.
class Comm {
 public:
  Comm(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {}
  // A communicator of `size` ranks formed through a c10d Store (collective
  // over them; every rank passes the same prefix, unused before).
  static std::shared_ptr<Comm> from_store(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                          int size, const std::string &prefix);
  ~Comm() { free(); }
  Comm(const Comm &) = delete;
  Comm &operator=(const Comm &) = delete;

  MPI_Comm get() const;
  int rank() const;
  int size() const;
  std::shared_ptr<Comm> dup() const;
  // The ranks of this communicator listed in `ranks`, in that order
  // (collective over them only); a rank not listed must not call it.
  std::shared_ptr<Comm> create_group(const std::vector<int> &ranks) const;
  void free();
  bool formed_by_bagua() const { return oob_size_ > 0; }

 private:
  MPI_Comm comm_;
  bool owned_;
  int oob_rank_ = 0, oob_size_ = 0;  // set for a communicator from_store made
};

// Why `t` cannot be handed to MPI ("" if it can): undefined, not strided,
// not on the CPU, not contiguous, or more than INT_MAX elements or bytes.
std::string tensor_problem(const at::Tensor &t);
// "torch.float32" and the like.
std::string dtype_name(at::ScalarType type);

// The allreduce flavours of bagua: every algorithm the library lists
// (bagua_algorithm_name), exact or compressed; those with state (sign: error
// feedback) need a SignState.
using Algorithm = bagua_algorithm;

// Every algorithm's name, in the library's order.
std::vector<std::string> algorithm_names();

// Throws py::value_error listing the names for an unknown one.
Algorithm parse_algorithm(const std::string &name);
// The name parse_algorithm takes, and the bagua function the algorithm calls.
const char *algorithm_name(Algorithm algorithm);
const char *algorithm_call(Algorithm algorithm);
// The MPI datatype of t for `algorithm`, or MPI_DATATYPE_NULL if the
// algorithm does not take t's dtype (exact: float32, float64, float16,
// bfloat16; the others: no float64).
MPI_Datatype algorithm_datatype(Algorithm algorithm, at::ScalarType type);
// The dtypes `algorithm` takes, for messages.
std::string algorithm_dtypes(Algorithm algorithm);
// Whether the algorithm keeps state per buffer (its calls take a SignState).
bool has_state(Algorithm algorithm);

// Error feedback of bagua_allreduce_sign for one buffer of `count` elements.
class SignState {
 public:
  SignState(int64_t count, std::shared_ptr<Comm> comm);
  ~SignState() { bagua_sign_state_destroy(&state_); }
  SignState(const SignState &) = delete;
  SignState &operator=(const SignState &) = delete;
  int64_t count() const { return count_; }
  bagua_sign_state_t get() const { return state_; }
  // The error feedback as a float32 CPU tensor of 2 * count elements
  // (bagua_sign_state_save), and back (bagua_sign_state_load).
  at::Tensor residuals() const;
  void load_residuals(const at::Tensor &residuals);

 private:
  int64_t count_;
  std::shared_ptr<Comm> comm_;
  bagua_sign_state_t state_ = nullptr;
};

// Validates t for `algorithm` (and `sign` for the sign algorithm), throwing
// py::type_error / py::value_error; returns t's MPI datatype.
MPI_Datatype checked_datatype(Algorithm algorithm, const at::Tensor &t, const SignState *sign);

// In-place allreduce of t (already checked) with `algorithm`; returns the
// bagua status. Blocking; call it without the GIL.
int run_allreduce(Algorithm algorithm, at::Tensor &t, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, const SignState *sign);

// Defines bagua_torch._C.Backend (backend.cpp).
void define_backend(pybind11::module_ &m);

}  // namespace bagua_torch
