// bagua_torch._C: MPI set-up, communicators, plain tensor collectives, the
// averagers' states and the DDP hook's worker thread (doc/pytorch.md). Every
// blocking bagua or MPI call runs with the GIL released.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common.hpp"

namespace py = pybind11;

namespace bagua_torch {

BaguaError::BaguaError(const std::string &call, int code)
    : BaguaError(call, code, bagua_last_error()) {}

BaguaError::BaguaError(const std::string &call, int code, const std::string &last_error)
    : std::runtime_error(call + " failed: " + bagua_error_string(code) + ": " + last_error),
      code_(code),
      error_string_(bagua_error_string(code)),
      last_error_(last_error) {}

void check_status(int rc, const char *call) {
  if (rc != BAGUA_SUCCESS) throw BaguaError(call, rc);
}

void check_mpi(int rc, const char *call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, length));
}

MPI_Comm Comm::get() const {
  if (comm_ == MPI_COMM_NULL) throw py::value_error("the communicator was freed");
  return comm_;
}

int Comm::rank() const {
  int rank = oob_rank_;
  if (!formed_by_bagua()) check_mpi(MPI_Comm_rank(get(), &rank), "MPI_Comm_rank");
  return rank;
}

int Comm::size() const {
  int size = oob_size_;
  if (!formed_by_bagua()) check_mpi(MPI_Comm_size(get(), &size), "MPI_Comm_size");
  return size;
}

namespace {

// bagua_oob's allgather over a c10d Store: each call's round of keys
// <prefix>/<round>/<rank>, set by every rank and read by all.
struct StoreExchange {
  c10::intrusive_ptr<c10d::Store> store;
  std::string prefix;
  int rank, size, round = 0;
};

int store_allgather(const void *send, void *recv, size_t bytes, void *ctx) {
  auto *exchange = static_cast<StoreExchange *>(ctx);
  const std::string base = exchange->prefix + "/" + std::to_string(exchange->round++) + "/";
  try {
    const auto *mine = static_cast<const uint8_t *>(send);
    exchange->store->set(base + std::to_string(exchange->rank),
                         std::vector<uint8_t>(mine, mine + bytes));
    // Every rank's bytes, in rank order (get waits for a key up to the store's timeout).
    for (int r = 0; r < exchange->size; ++r) {
      const std::vector<uint8_t> theirs = exchange->store->get(base + std::to_string(r));
      if (theirs.size() != bytes) return 1;
      std::copy(theirs.begin(), theirs.end(), static_cast<uint8_t *>(recv) + r * bytes);
    }
  } catch (const std::exception &) {
    return 1;
  }
  return 0;
}

}  // namespace

std::shared_ptr<Comm> Comm::from_store(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                       int size, const std::string &prefix) {
  StoreExchange exchange{store, prefix, rank, size};
  bagua_oob oob = BAGUA_OOB_INITIALIZER;
  oob.rank = rank;
  oob.size = size;
  oob.allgather = store_allgather;
  oob.ctx = &exchange;
  MPI_Comm comm = MPI_COMM_NULL;
  check_status(bagua_comm_create_oob(&oob, &comm), "bagua_comm_create_oob");
  auto made = std::make_shared<Comm>(comm, true);
  made->oob_rank_ = rank;
  made->oob_size_ = size;
  return made;
}

std::shared_ptr<Comm> Comm::dup() const {
  if (formed_by_bagua())
    throw py::value_error(
        "a communicator formed without MPI has no MPI duplicate: make another "
        "one (bagua_torch.runtime.private_comm)");
  MPI_Comm copy = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(get(), &copy), "MPI_Comm_dup");
  return std::make_shared<Comm>(copy, true);
}

std::shared_ptr<Comm> Comm::create_group(const std::vector<int> &ranks) const {
  if (formed_by_bagua())
    throw py::value_error(
        "a communicator formed without MPI has no MPI subgroups: make one "
        "(bagua_torch.runtime.group_comm)");
  MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(get(), &all), "MPI_Comm_group");
  const int rc = MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &some);
  MPI_Group_free(&all);
  check_mpi(rc, "MPI_Group_incl");
  MPI_Comm created = MPI_COMM_NULL;
  const int created_rc = MPI_Comm_create_group(get(), some, 0, &created);
  MPI_Group_free(&some);
  check_mpi(created_rc, "MPI_Comm_create_group");
  if (created == MPI_COMM_NULL) throw py::value_error("this rank is not among the group's ranks");
  return std::make_shared<Comm>(created, true);
}

void Comm::free() {
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (owned_ && comm_ != MPI_COMM_NULL && !finalized) {
    if (formed_by_bagua())
      bagua_comm_free(&comm_);
    else
      MPI_Comm_free(&comm_);
  }
  comm_ = MPI_COMM_NULL;
}

std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kByte: return "torch.uint8";
    case at::kChar: return "torch.int8";
    case at::kShort: return "torch.int16";
    case at::kInt: return "torch.int32";
    case at::kLong: return "torch.int64";
    case at::kBool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(type);
  }
}

std::string tensor_problem(const at::Tensor &t) {
  if (!t.defined()) return "is an undefined tensor";
  if (t.layout() != at::kStrided)
    return "is " + c10::str(t.layout()) + ", not a dense (strided) tensor";
  if (!t.device().is_cpu())
    return "is on " + t.device().str() + ": bagua_torch takes CPU tensors (this torch build)";
  if (!t.is_contiguous()) return "is not contiguous: pass tensor.contiguous()";
  if (t.numel() > INT_MAX || t.numel() * static_cast<int64_t>(t.element_size()) > INT_MAX)
    return "has more than 2^31 - 1 elements or bytes (split it)";
  return "";
}

namespace {

// exact takes float64 too; the codecs read float32 and the half types.
bool takes_double(Algorithm algorithm) { return algorithm == BAGUA_ALGORITHM_EXACT; }

}  // namespace

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (int a = 0; const char *name = bagua_algorithm_name(Algorithm(a)); ++a) names.push_back(name);
  return names;
}

Algorithm parse_algorithm(const std::string &name) {
  Algorithm algorithm = BAGUA_ALGORITHM_EXACT;
  if (bagua_algorithm_from_name(name.c_str(), &algorithm) == BAGUA_SUCCESS) return algorithm;
  std::string names;
  for (const std::string &known : algorithm_names()) names += (names.empty() ? "" : ", ") + known;
  throw py::value_error("unknown algorithm '" + name + "': choose one of " + names);
}

const char *algorithm_name(Algorithm algorithm) { return bagua_algorithm_name(algorithm); }
const char *algorithm_call(Algorithm algorithm) {
  if (algorithm == BAGUA_ALGORITHM_EXACT) return "bagua_allreduce";
  return has_state(algorithm) ? "bagua_allreduce_sign" : "bagua_allreduce_alg";
}
bool has_state(Algorithm algorithm) { return bagua_algorithm_has_state(algorithm) != 0; }

MPI_Datatype algorithm_datatype(Algorithm algorithm, at::ScalarType type) {
  switch (type) {
    case at::kFloat: return MPI_FLOAT;
    case at::kHalf: return BAGUA_FLOAT16;
    case at::kBFloat16: return BAGUA_BFLOAT16;
    case at::kDouble: return takes_double(algorithm) ? MPI_DOUBLE : MPI_DATATYPE_NULL;
    default: return MPI_DATATYPE_NULL;
  }
}

std::string algorithm_dtypes(Algorithm algorithm) {
  return std::string("torch.float32, ") + (takes_double(algorithm) ? "torch.float64, " : "") +
         "torch.float16 or torch.bfloat16";
}

SignState::SignState(int64_t count, std::shared_ptr<Comm> comm)
    : count_(count), comm_(std::move(comm)) {
  if (count < 0 || count > INT_MAX) throw py::value_error("count must be in [0, 2^31 - 1]");
  check_status(bagua_sign_state_create(static_cast<int>(count), comm_->get(), &state_),
               "bagua_sign_state_create");
}

at::Tensor SignState::residuals() const {
  at::Tensor out = at::empty({2 * count_}, at::kFloat);
  check_status(bagua_sign_state_save(state_, out.data_ptr<float>(), 2 * count_),
               "bagua_sign_state_save");
  return out;
}

void SignState::load_residuals(const at::Tensor &residuals) {
  if (residuals.scalar_type() != at::kFloat || residuals.numel() != 2 * count_)
    throw py::value_error("residuals must be a float32 tensor of " + std::to_string(2 * count_) +
                          " elements (2 * count)");
  const at::Tensor host = residuals.to(at::kCPU).contiguous();
  check_status(bagua_sign_state_load(state_, host.data_ptr<float>(), 2 * count_),
               "bagua_sign_state_load");
}

MPI_Datatype checked_datatype(Algorithm algorithm, const at::Tensor &t, const SignState *sign) {
  const std::string problem = tensor_problem(t);
  if (!problem.empty()) throw py::value_error("the tensor " + problem);
  const MPI_Datatype datatype = algorithm_datatype(algorithm, t.scalar_type());
  if (datatype == MPI_DATATYPE_NULL)
    throw py::type_error(std::string(algorithm_name(algorithm)) + " takes " +
                         algorithm_dtypes(algorithm) + " tensors, not " +
                         dtype_name(t.scalar_type()));
  if (has_state(algorithm) && (sign == nullptr || sign->count() != t.numel()))
    throw py::value_error(std::string(algorithm_name(algorithm)) +
                          " keeps error feedback per buffer: pass a SignState made for this "
                          "tensor's numel (" +
                          std::to_string(t.numel()) + ")");
  return datatype;
}

int run_allreduce(Algorithm algorithm, at::Tensor &t, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, const SignState *sign) {
  void *data = t.data_ptr();
  const int count = static_cast<int>(t.numel());
  if (has_state(algorithm))
    return bagua_allreduce_sign(MPI_IN_PLACE, data, count, datatype, op, comm, sign->get());
  return bagua_allreduce_alg(MPI_IN_PLACE, data, count, datatype, op, comm, algorithm);
}

namespace {

py::handle g_error_type;  // bagua_torch._C.BaguaError, kept alive by the module

// The Python BaguaError for e, with attributes code, error_string, last_error.
py::object to_python_error(const BaguaError &e) {
  py::object error = g_error_type(e.what());
  error.attr("code") = e.code();
  error.attr("error_string") = e.error_string();
  error.attr("last_error") = e.last_error();
  return error;
}

// Initialises MPI at MPI_THREAD_MULTIPLE unless somebody (mpi4py, the
// application) already has; true if this call did.
bool mpi_init() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) throw std::runtime_error("MPI is already finalised");
  if (initialized) return false;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  return true;
}

int mpi_thread_level() {
  int level = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
  return level;
}

py::bytes broadcast_bytes(const Comm &comm, const std::string &data, int root) {
  int length = static_cast<int>(data.size());
  std::string buffer;
  {
    py::gil_scoped_release nogil;
    check_mpi(MPI_Bcast(&length, 1, MPI_INT, root, comm.get()), "MPI_Bcast");
    buffer = comm.rank() == root ? data : std::string(length, '\0');
    check_mpi(MPI_Bcast(buffer.data(), length, MPI_CHAR, root, comm.get()), "MPI_Bcast");
  }
  return py::bytes(buffer);
}

void allreduce(at::Tensor t, const std::string &algorithm_name, bool average, const Comm &comm,
               const std::shared_ptr<SignState> &sign) {
  const Algorithm algorithm = parse_algorithm(algorithm_name);
  const MPI_Datatype datatype = checked_datatype(algorithm, t, sign.get());
  const MPI_Op op = average ? BAGUA_AVG : MPI_SUM;
  py::gil_scoped_release nogil;
  check_status(run_allreduce(algorithm, t, datatype, op, comm.get(), sign.get()),
               algorithm_call(algorithm));
}

// bagua_reduce_scatter_block_alg of `input` (comm.size() shards) into
// `output` (one shard), averaging or summing.
void reduce_scatter(at::Tensor output, at::Tensor input, const std::string &algorithm_name,
                    bool average, const Comm &comm) {
  const Algorithm algorithm = parse_algorithm(algorithm_name);
  const MPI_Datatype datatype = checked_datatype(algorithm, input, nullptr);
  checked_datatype(algorithm, output, nullptr);
  if (output.scalar_type() != input.scalar_type() || input.numel() != output.numel() * comm.size())
    throw py::value_error(
        "the reduce-scatter's input must hold " + std::to_string(comm.size()) +
        " shards of the output's dtype and numel (" + std::to_string(output.numel()) + "), not " +
        std::to_string(input.numel()) + " elements of " + dtype_name(input.scalar_type()));
  py::gil_scoped_release nogil;
  check_status(bagua_reduce_scatter_block_alg(input.data_ptr(), output.data_ptr(),
                                              static_cast<int>(output.numel()), datatype,
                                              average ? BAGUA_AVG : MPI_SUM, comm.get(), algorithm),
               "bagua_reduce_scatter_block_alg");
}

void broadcast(at::Tensor t, int root, const Comm &comm) {
  const std::string problem = tensor_problem(t);
  if (!problem.empty()) throw py::value_error("the tensor " + problem);
  py::gil_scoped_release nogil;
  check_status(bagua_bcast(t.data_ptr(), static_cast<int>(t.nbytes()), MPI_BYTE, root, comm.get()),
               "bagua_bcast");
}

// The bagua datatype of a floating tensor for the averaging calls; `what`
// names the call in the message.
MPI_Datatype averaging_datatype(const at::Tensor &t, bool takes_double, const char *what) {
  const std::string problem = tensor_problem(t);
  if (!problem.empty()) throw py::value_error("the tensor " + problem);
  const MPI_Datatype datatype = algorithm_datatype(
      takes_double ? BAGUA_ALGORITHM_EXACT : BAGUA_ALGORITHM_Q8, t.scalar_type());
  if (datatype == MPI_DATATYPE_NULL)
    throw py::type_error(
        std::string(what) + " takes floating tensors (" +
        algorithm_dtypes(takes_double ? BAGUA_ALGORITHM_EXACT : BAGUA_ALGORITHM_Q8) + "), not " +
        dtype_name(t.scalar_type()));
  return datatype;
}

bagua_peer_mode parse_peer_mode(const std::string &mode) {
  if (mode == "all") return BAGUA_PEER_ALL;
  if (mode == "shift_one") return BAGUA_PEER_SHIFT_ONE;
  if (mode == "ring") return BAGUA_PEER_RING;
  throw py::value_error("unknown mode '" + mode + "': choose one of all, shift_one, ring");
}

void decentralized_average(at::Tensor t, const std::string &mode, int step, int interval,
                           const Comm &comm) {
  const bagua_peer_mode peer_mode = parse_peer_mode(mode);
  const MPI_Datatype datatype = averaging_datatype(t, true, "decentralized averaging");
  py::gil_scoped_release nogil;
  check_status(bagua_decentralized_average(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()),
                                           datatype, peer_mode, step, interval, comm.get()),
               "bagua_decentralized_average");
}

py::dict partial_average(at::Tensor t, int group_size, const Comm &comm) {
  const MPI_Datatype datatype = averaging_datatype(t, true, "partial averaging");
  bagua_group_info group{};
  {
    py::gil_scoped_release nogil;
    check_status(bagua_partial_reduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()),
                                      datatype, group_size, comm.get(), &group),
                 "bagua_partial_reduce");
  }
  py::dict result;
  result["group_id"] = group.group_id;
  result["size"] = group.size;
  result["bridging"] = group.bridging != 0;
  result["members"] = std::vector<int>(group.members, group.members + group.listed);
  result["weights"] = std::vector<double>(group.weights, group.weights + group.listed);
  result["staleness"] = std::vector<long long>(group.staleness, group.staleness + group.listed);
  return result;
}

void partial_leave(const Comm &comm) {
  py::gil_scoped_release nogil;
  check_status(bagua_partial_leave(comm.get()), "bagua_partial_leave");
}

// Runs `work` with the GIL released if this thread holds it (a destructor may
// run with or without it), so a background thread waiting for the GIL can finish.
template <typename Work>
void without_gil(Work work) {
  if (PyGILState_Check()) {
    py::gil_scoped_release nogil;
    work();
  } else {
    work();
  }
}

// bagua_lowprec_* state of one buffer: the count and dtype stay fixed.
class LowPrecisionState {
 public:
  LowPrecisionState(at::Tensor t, int interval, std::shared_ptr<Comm> comm)
      : numel_(t.numel()), type_(t.scalar_type()), comm_(std::move(comm)) {
    const MPI_Datatype datatype = averaging_datatype(t, false, "low-precision averaging");
    py::gil_scoped_release nogil;
    check_status(bagua_lowprec_create(t.data_ptr(), static_cast<int>(numel_), datatype, interval,
                                      comm_->get(), &state_),
                 "bagua_lowprec_create");
  }
  ~LowPrecisionState() { bagua_lowprec_destroy(&state_); }

  void step(at::Tensor t) {
    averaging_datatype(t, false, "low-precision averaging");
    if (t.numel() != numel_ || t.scalar_type() != type_)
      throw py::value_error("the tensor must keep the numel and dtype it was created with");
    if (state_ == nullptr) throw py::value_error("the state was closed");
    py::gil_scoped_release nogil;
    check_status(bagua_lowprec_step(state_, t.data_ptr()), "bagua_lowprec_step");
  }
  void close() { bagua_lowprec_destroy(&state_); }

 private:
  int64_t numel_;
  at::ScalarType type_;
  std::shared_ptr<Comm> comm_;
  bagua_lowprec_t state_ = nullptr;
};

// bagua_async_average_* of one buffer, which it keeps alive.
class AsyncAverage {
 public:
  AsyncAverage(at::Tensor t, int interval_ms, std::shared_ptr<Comm> comm)
      : buffer_(std::move(t)), comm_(std::move(comm)) {
    const MPI_Datatype datatype = averaging_datatype(buffer_, true, "asynchronous averaging");
    py::gil_scoped_release nogil;
    check_status(bagua_async_average_create(buffer_.data_ptr(), static_cast<int>(buffer_.numel()),
                                            datatype, interval_ms, comm_->get(), &handle_),
                 "bagua_async_average_create");
  }
  ~AsyncAverage() {
    if (handle_ != nullptr) without_gil([this] { bagua_async_average_destroy(&handle_); });
  }

  void lock() { check_status(bagua_async_average_lock(live()), "bagua_async_average_lock"); }
  void unlock() { check_status(bagua_async_average_unlock(live()), "bagua_async_average_unlock"); }
  void abort() { check_status(bagua_async_average_abort(live()), "bagua_async_average_abort"); }
  void resume() { check_status(bagua_async_average_resume(live()), "bagua_async_average_resume"); }
  long long rounds() {
    long long rounds = 0;
    check_status(bagua_async_average_rounds(live(), &rounds), "bagua_async_average_rounds");
    return rounds;
  }
  void close() {
    if (handle_ != nullptr)
      check_status(bagua_async_average_destroy(&handle_), "bagua_async_average_destroy");
  }

 private:
  bagua_async_t live() const {
    if (handle_ == nullptr) throw py::value_error("the asynchronous averager was closed");
    return handle_;
  }

  at::Tensor buffer_;
  std::shared_ptr<Comm> comm_;
  bagua_async_t handle_ = nullptr;
};

// Starts each DDP bucket's allreduce as a nonblocking bagua call, a task of
// the communicator's progress engine (buckets in flight progress together),
// and completes the buckets' torch.futures.Futures in submission order (DDP's
// bucket order) with the GIL held on a completion thread, so the engine
// never waits for the GIL and backward continues while buckets are on the
// wire.
class HookRunner {
 public:
  HookRunner(std::shared_ptr<Comm> comm, const std::string &algorithm)
      : comm_(std::move(comm)), mpi_comm_(comm_->get()), algorithm_(parse_algorithm(algorithm)) {
    if (mpi_thread_level() < MPI_THREAD_MULTIPLE)
      throw std::runtime_error(
          "DDP hooks run bagua on its progress thread: MPI must provide MPI_THREAD_MULTIPLE "
          "(initialise it with bagua_torch.init())");
    completer_ = std::thread([this] { run(); });
  }
  ~HookRunner() {
    if (completer_.joinable()) without_gil([this] { stop(); });
  }

  // Called with the GIL, from the hook, in DDP's bucket order (the same on
  // every rank).
  void submit(at::Tensor bucket, py::object future, std::shared_ptr<SignState> sign) {
    const MPI_Datatype datatype = checked_datatype(algorithm_, bucket, sign.get());
    auto job = std::make_unique<Job>();
    job->runner = this;
    job->tensor = std::move(bucket);
    job->datatype = datatype;
    job->future = std::move(future);
    job->sign = std::move(sign);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) throw py::value_error("the hook state was closed");
      ++in_flight_;
      job->sequence = next_submitted_++;
    }
    int rc = BAGUA_SUCCESS;
    {
      py::gil_scoped_release nogil;
      rc = start(*job);
    }
    if (rc == BAGUA_SUCCESS) {
      job.release();  // the completion callback owns it now
      return;
    }
    // A refused call fails its future, in its turn, as one that failed while
    // running.
    job->status = rc;
    job->message = bagua_last_error();
    hand_over(std::move(job));
  }

  long long bytes_sent() const { return bytes_sent_; }

  // Finishes the buckets already submitted, then ends the completion
  // thread. Without the GIL.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    if (completer_.joinable()) completer_.join();
  }

 private:
  static constexpr const char *kCall = "bagua_iallreduce_ex";

  struct Job {
    HookRunner *runner = nullptr;
    uint64_t sequence = 0;  // in submission order
    at::Tensor tensor;
    MPI_Datatype datatype = MPI_DATATYPE_NULL;
    py::object future;  // touched only with the GIL
    std::shared_ptr<SignState> sign;
    int status = BAGUA_SUCCESS;
    std::string message;  // bagua_last_error() of a failure
  };

  int start(Job &job) {
    bagua_iallreduce_params params = BAGUA_IALLREDUCE_PARAMS_INITIALIZER;
    params.algorithm = algorithm_;
    params.state = job.sign ? job.sign->get() : nullptr;
    params.complete = &HookRunner::completed;
    params.complete_arg = &job;
    return bagua_iallreduce_ex(MPI_IN_PLACE, job.tensor.data_ptr(),
                               static_cast<int>(job.tensor.numel()), job.datatype, BAGUA_AVG,
                               mpi_comm_, &params, nullptr);
  }

  // On bagua's progress thread: the call has ended.
  static void completed(void *arg, int status, const char *message) {
    std::unique_ptr<Job> job(static_cast<Job *>(arg));
    job->status = status;
    if (status != BAGUA_SUCCESS) job->message = message;
    job->runner->hand_over(std::move(job));
  }

  // Gives an ended job to the completion thread.
  void hand_over(std::unique_ptr<Job> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const uint64_t sequence = job->sequence;
      ended_.emplace(sequence, std::move(job));
    }
    wake_.notify_one();
  }

  // Whether the next job in submission order has ended. Under mutex_.
  bool next_ended() const { return !ended_.empty() && ended_.begin()->first == next_completed_; }

  void run() {
    for (;;) {
      std::unique_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return next_ended() || (stopping_ && in_flight_ == 0); });
        if (!next_ended()) return;  // stopping, and every bucket is done
        job = std::move(ended_.begin()->second);
        ended_.erase(ended_.begin());
      }
      if (job->status == BAGUA_SUCCESS) count_bytes(*job);
      complete(std::move(job));
      std::lock_guard<std::mutex> lock(mutex_);
      ++next_completed_;
      --in_flight_;
    }
  }

  // Adds what the bucket's allreduce sent, as bagua_allreduce_bytes reckons it.
  void count_bytes(const Job &job) {
    MPI_Count bytes = 0;
    if (bagua_allreduce_bytes(algorithm_, job.tensor.numel(), job.datatype, mpi_comm_, &bytes) ==
        BAGUA_SUCCESS)
      bytes_sent_ += bytes;
  }

  // Sets the job's future and frees the job, with the GIL (its Python objects).
  static void complete(std::unique_ptr<Job> job) {
    std::optional<BaguaError> error;
    if (job->status != BAGUA_SUCCESS) error.emplace(kCall, job->status, job->message);
    py::gil_scoped_acquire gil;
    try {
      if (error)
        job->future.attr("set_exception")(to_python_error(*error));
      else
        job->future.attr("set_result")(job->tensor);
    } catch (py::error_already_set &e) {
      e.discard_as_unraisable("bagua_torch hook completion");
    }
    job.reset();
  }

  std::shared_ptr<Comm> comm_;
  MPI_Comm mpi_comm_;  // read once: the callback must not throw
  Algorithm algorithm_;
  std::mutex mutex_;  // guards the counts, ended_ and stopping_
  std::condition_variable wake_;
  std::map<uint64_t, std::unique_ptr<Job>> ended_;  // by sequence
  uint64_t next_submitted_ = 0, next_completed_ = 0;
  int in_flight_ = 0;  // submitted and not yet completed
  bool stopping_ = false;
  std::atomic<long long> bytes_sent_{0};
  std::thread completer_;
};

std::shared_ptr<Comm> world() { return std::make_shared<Comm>(MPI_COMM_WORLD, false); }

std::shared_ptr<Comm> from_fortran(int64_t handle) {
  return std::make_shared<Comm>(MPI_Comm_f2c(static_cast<MPI_Fint>(handle)), false);
}

void define_comm(py::module_ &m) {
  py::class_<Comm, std::shared_ptr<Comm>>(m, "Comm",
                                          "An MPI communicator (owned ones are freed with it).")
      .def_static("world", &world, "MPI_COMM_WORLD (not owned).")
      .def_static("from_store", &Comm::from_store, py::arg("store"), py::arg("rank"),
                  py::arg("size"), py::arg("prefix"), py::call_guard<py::gil_scoped_release>(),
                  "A communicator of the ranks that call this with the same c10d Store and "
                  "prefix, formed without MPI (bagua_comm_create_oob; owned).")
      .def_static("from_fortran", &from_fortran, py::arg("handle"),
                  "A communicator from its Fortran handle (mpi4py: comm.py2f()), not owned.")
      .def("dup", &Comm::dup, py::call_guard<py::gil_scoped_release>(), "MPI_Comm_dup (owned).")
      .def("create_group", &Comm::create_group, py::arg("ranks"),
           py::call_guard<py::gil_scoped_release>(),
           "The listed ranks, in that order (collective over them; owned).")
      .def_property_readonly("rank", &Comm::rank)
      .def_property_readonly("size", &Comm::size)
      .def_property_readonly("formed_by_bagua", &Comm::formed_by_bagua)
      .def("free", &Comm::free);
}

void define_states(py::module_ &m) {
  py::class_<SignState, std::shared_ptr<SignState>>(m, "SignState")
      .def(py::init<int64_t, std::shared_ptr<Comm>>(), py::arg("count"), py::arg("comm"))
      .def_property_readonly("count", &SignState::count)
      .def("residuals", &SignState::residuals,
           "The error feedback (2 * count float32 values) for a checkpoint.")
      .def("load_residuals", &SignState::load_residuals, py::arg("residuals"),
           "Restores error feedback saved by residuals().");
  py::class_<LowPrecisionState>(m, "LowPrecisionState")
      .def(py::init<at::Tensor, int, std::shared_ptr<Comm>>(), py::arg("tensor"),
           py::arg("interval"), py::arg("comm"))
      .def("step", &LowPrecisionState::step, py::arg("tensor"))
      .def("close", &LowPrecisionState::close);
  py::class_<AsyncAverage>(m, "AsyncAverage")
      .def(py::init<at::Tensor, int, std::shared_ptr<Comm>>(), py::arg("tensor"),
           py::arg("interval_ms"), py::arg("comm"))
      .def("lock", &AsyncAverage::lock, py::call_guard<py::gil_scoped_release>())
      .def("unlock", &AsyncAverage::unlock)
      .def("abort", &AsyncAverage::abort, py::call_guard<py::gil_scoped_release>())
      .def("resume", &AsyncAverage::resume, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("rounds", &AsyncAverage::rounds)
      .def("close", &AsyncAverage::close, py::call_guard<py::gil_scoped_release>());
  py::class_<HookRunner>(m, "HookRunner")
      .def(py::init<std::shared_ptr<Comm>, const std::string &>(), py::arg("comm"),
           py::arg("algorithm"))
      .def("submit", &HookRunner::submit, py::arg("bucket"), py::arg("future"),
           py::arg("sign_state"))
      .def_property_readonly("bytes_sent", &HookRunner::bytes_sent)
      .def("stop", &HookRunner::stop, py::call_guard<py::gil_scoped_release>());
}

void define_calls(py::module_ &m) {
  m.def(
      "algorithms",
      [](bool with_state) {
        std::vector<std::string> names;
        for (const std::string &name : algorithm_names())
          if (with_state || !has_state(parse_algorithm(name))) names.push_back(name);
        return names;
      },
      py::arg("with_state") = true,
      "Every allreduce algorithm the library lists (exact, then its compressed wires); "
      "with_state=False leaves out those that need a SignState.");
  m.def("mpi_init", &mpi_init,
        "Initialises MPI (MPI_THREAD_MULTIPLE) unless it is; True if this call did.");
  m.def(
      "finalize",
      [] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) check_status(bagua_finalize(), "bagua_finalize");
      },
      py::call_guard<py::gil_scoped_release>(),
      "bagua_finalize (a no-op once MPI is finalised): stops bagua's threads before MPI_Finalize.");
  m.def(
      "mpi_finalize", [] { check_mpi(MPI_Finalize(), "MPI_Finalize"); },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "mpi_abort", [](int code) { MPI_Abort(MPI_COMM_WORLD, code); }, py::arg("code"));
  m.def("broadcast_bytes", &broadcast_bytes, py::arg("comm"), py::arg("data"), py::arg("root"));
  m.def("allreduce_", &allreduce, py::arg("tensor"), py::arg("algorithm"), py::arg("average"),
        py::arg("comm"), py::arg("sign_state"));
  m.def("reduce_scatter_", &reduce_scatter, py::arg("output"), py::arg("input"),
        py::arg("algorithm"), py::arg("average"), py::arg("comm"));
  m.def("broadcast_", &broadcast, py::arg("tensor"), py::arg("root"), py::arg("comm"));
  m.def("decentralized_average_", &decentralized_average, py::arg("tensor"), py::arg("mode"),
        py::arg("step"), py::arg("interval"), py::arg("comm"));
  m.def("partial_average_", &partial_average, py::arg("tensor"), py::arg("group_size"),
        py::arg("comm"));
  m.def("partial_leave", &partial_leave, py::arg("comm"));
  m.def("version", [] { return std::string(bagua_version_string()); });
}

}  // namespace
}  // namespace bagua_torch

PYBIND11_MODULE(_C, m) {
  using namespace bagua_torch;
  py::module_::import("torch.distributed");  // registers c10d::Backend, our base class
  g_error_type = py::exception<BaguaError>(m, "BaguaError", PyExc_RuntimeError).release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const BaguaError &e) {
      const py::object error = to_python_error(e);
      PyErr_SetObject(g_error_type.ptr(), error.ptr());
    }
  });
  define_comm(m);
  define_states(m);
  define_calls(m);
  define_backend(m);
}
