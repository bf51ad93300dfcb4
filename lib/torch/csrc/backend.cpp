// The c10d backend "bagua" (doc/pytorch.md), a c10d::Backend for CPU tensors:
// allreduce (the group's bagua wire for floating sums, exact bagua for the
// other floating reductions, MPI for integers and products), broadcast,
// allgather, all_gather_into_tensor, gather, scatter, reduce, reduce_scatter,
// reduce_scatter_tensor (both also coalesced, as FSDP2 calls them), alltoall,
// barrier, send and recv. Collectives run on
// one worker thread per backend, in the order the caller issued them (the same
// on every rank), so the caller (DDP's backward) goes on while a bucket is on
// the wire; their Work completes a future with the output tensors. send and
// recv are MPI's nonblocking calls, completed by Work::wait. c10d calls these
// without the GIL, so nothing here touches Python.
#include <climits>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "common.hpp"

namespace py = pybind11;

namespace bagua_torch {
namespace {

using RedOp = c10d::ReduceOp::RedOpType;
using Tensors = std::vector<at::Tensor>;

void check_tensor(const at::Tensor &t, const char *call) {
  const std::string problem = tensor_problem(t);
  TORCH_CHECK(problem.empty(), "bagua backend: ", call, ": the tensor ", problem);
}

// The one tensor of a c10d call (CPU collectives take one per process).
at::Tensor &single(Tensors &tensors, const char *call) {
  TORCH_CHECK(tensors.size() == 1, "bagua backend: ", call, " takes one tensor per process, got ",
              tensors.size());
  check_tensor(tensors[0], call);
  return tensors[0];
}

void check_bagua(int rc, const char *call) {
  if (rc == BAGUA_SUCCESS) return;
  const BaguaError error(call, rc);
  TORCH_CHECK(false, "bagua backend: ", error.what());
}

void check_mpi_call(int rc, const char *call) {
  try {
    check_mpi(rc, call);
  } catch (const std::runtime_error &e) {
    TORCH_CHECK(false, "bagua backend: ", e.what());
  }
}

bool is_floating(at::ScalarType type) {
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

// The datatype of MPI's own reductions on `type`.
MPI_Datatype reduction_datatype(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kHalf: return BAGUA_FLOAT16;
    case at::kBFloat16: return BAGUA_BFLOAT16;
    case at::kByte: return MPI_UINT8_T;
    case at::kChar: return MPI_INT8_T;
    case at::kShort: return MPI_INT16_T;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kBool: return MPI_C_BOOL;
    default: break;
  }
  TORCH_CHECK(false, "bagua backend: reductions do not take ", dtype_name(type), " tensors");
}

// MPI's own reduction for `op` on `type`. AVG sums (the caller divides);
// BAGUA_AVG is the sum MPI runs on float16 / bfloat16.
MPI_Op reduction_op(RedOp op, at::ScalarType type) {
  const bool half = type == at::kHalf || type == at::kBFloat16;
  const bool integral = !is_floating(type);
  switch (op) {
    case RedOp::SUM: return half ? BAGUA_AVG : MPI_SUM;
    case RedOp::AVG:
      if (!integral) return half ? BAGUA_AVG : MPI_SUM;
      break;
    case RedOp::PRODUCT:
      if (!half) return MPI_PROD;
      break;
    case RedOp::MIN:
      if (!half) return MPI_MIN;
      break;
    case RedOp::MAX:
      if (!half) return MPI_MAX;
      break;
    case RedOp::BAND:
      if (integral) return type == at::kBool ? MPI_LAND : MPI_BAND;
      break;
    case RedOp::BOR:
      if (integral) return type == at::kBool ? MPI_LOR : MPI_BOR;
      break;
    case RedOp::BXOR:
      if (integral) return type == at::kBool ? MPI_LXOR : MPI_BXOR;
      break;
    default: break;
  }
  TORCH_CHECK(false, "bagua backend: reduce op ", static_cast<int>(op), " does not take ",
              dtype_name(type), " tensors");
}

int byte_count(const at::Tensor &t, int64_t times, const char *call) {
  const int64_t bytes = static_cast<int64_t>(t.nbytes()) * times;
  TORCH_CHECK(bytes <= INT_MAX, "bagua backend: ", call, " moves more than 2^31 - 1 bytes");
  return static_cast<int>(bytes);
}

// `tensors` must be `size` CPU tensors shaped like `like` (same dtype and numel).
void check_like(const Tensors &tensors, const at::Tensor &like, int size, const char *call) {
  TORCH_CHECK(static_cast<int>(tensors.size()) == size, "bagua backend: ", call, " needs ", size,
              " tensors in the list, got ", tensors.size());
  for (const at::Tensor &t : tensors)
    TORCH_CHECK(t.defined() && t.device().is_cpu() && t.scalar_type() == like.scalar_type() &&
                    t.numel() == like.numel(),
                "bagua backend: ", call, ": every tensor of the list must be a CPU tensor of ",
                dtype_name(like.scalar_type()), " with ", like.numel(), " elements");
}

// The elements of `parts` one after another (a copy).
at::Tensor concatenated(const Tensors &parts) {
  Tensors flat;
  for (const at::Tensor &t : parts) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// Copies the consecutive equal pieces of `whole` into `parts`.
void split_into(Tensors &parts, const at::Tensor &whole) {
  int64_t offset = 0;
  for (at::Tensor &t : parts) {
    t.copy_(whole.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

// A collective's Work: completed by the backend's worker thread through its
// future (with the output tensors, or the error that wait() rethrows).
class QueuedWork : public c10d::Work {
 public:
  QueuedWork(int rank, c10d::OpType type, Tensors outputs)
      : c10d::Work(rank, type),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {}

  void finish_with(std::exception_ptr error) {
    if (error)
      future_->setError(error);
    else
      future_->markCompleted(c10::IValue(outputs_));
  }
  bool isCompleted() override { return future_->completed(); }
  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
  std::exception_ptr exception() const override {
    return future_->hasError() ? future_->exception_ptr() : nullptr;
  }
  Tensors result() override { return outputs_; }
  bool wait(std::chrono::milliseconds) override {
    future_->wait();
    if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
    return true;
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  Tensors outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A send or receive: MPI's request, completed (or failed) in wait().
class PointToPointWork : public c10d::Work {
 public:
  PointToPointWork(int rank, c10d::OpType type, at::Tensor tensor, MPI_Request request)
      : c10d::Work(rank, type), tensor_(std::move(tensor)), request_(request) {}
  ~PointToPointWork() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  bool isCompleted() override {
    int done = request_ == MPI_REQUEST_NULL;
    if (!done) check_mpi_call(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done;
  }
  bool isSuccess() const override { return request_ == MPI_REQUEST_NULL; }
  Tensors result() override { return {tensor_}; }
  bool wait(std::chrono::milliseconds) override {
    check_mpi_call(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait");
    return true;
  }

 private:
  at::Tensor tensor_;  // kept alive until the request completes
  MPI_Request request_;
};

// Runs queued collectives one at a time, in submission order.
class Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void submit(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and every job is done
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

class BaguaBackend : public c10d::Backend {
 public:
  BaguaBackend(std::shared_ptr<Comm> comm, Algorithm algorithm)
      : c10d::Backend(comm->rank(), comm->size()),
        comm_(std::move(comm)),
        mpi_comm_(comm_->get()),
        algorithm_(algorithm) {}

  const std::string getBackendName() const override { return "bagua"; }
  Algorithm algorithm() const { return algorithm_; }

  c10::intrusive_ptr<c10d::Work> allreduce(Tensors &tensors,
                                           const c10d::AllreduceOptions &opts) override {
    at::Tensor t = single(tensors, "allreduce");
    const RedOp op = opts.reduceOp;
    reduction_op(op, t.scalar_type());  // refuses what no path takes, on the caller's thread
    return enqueue(c10d::OpType::ALLREDUCE, tensors,
                   [this, t, op]() mutable { allreduce_now(t, op); });
  }

  c10::intrusive_ptr<c10d::Work> reduce(Tensors &tensors,
                                        const c10d::ReduceOptions &opts) override {
    at::Tensor t = single(tensors, "reduce");
    const int root = checked_root(opts.rootRank, "reduce");
    const RedOp op = opts.reduceOp;
    const MPI_Op mpi_op = reduction_op(op, t.scalar_type());
    return enqueue(c10d::OpType::REDUCE, tensors, [this, t, root, op, mpi_op] {
      const bool at_root = getRank() == root;
      check_mpi_call(MPI_Reduce(at_root ? MPI_IN_PLACE : t.data_ptr(), t.data_ptr(),
                                static_cast<int>(t.numel()), reduction_datatype(t.scalar_type()),
                                mpi_op, root, mpi_comm_),
                     "MPI_Reduce");
      if (at_root && op == RedOp::AVG) t.div_(getSize());
    });
  }

  c10::intrusive_ptr<c10d::Work> broadcast(Tensors &tensors,
                                           const c10d::BroadcastOptions &opts) override {
    at::Tensor t = single(tensors, "broadcast");
    TORCH_CHECK(opts.rootTensor == 0, "bagua backend: broadcast takes one tensor per process");
    const int root = checked_root(opts.rootRank, "broadcast");
    const int bytes = byte_count(t, 1, "broadcast");
    return enqueue(c10d::OpType::BROADCAST, tensors, [this, t, root, bytes] {
      check_mpi_call(MPI_Bcast(t.data_ptr(), bytes, MPI_BYTE, root, mpi_comm_), "MPI_Bcast");
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<Tensors> &outputs, Tensors &inputs,
                                           const c10d::AllgatherOptions &) override {
    at::Tensor input = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1, "bagua backend: allgather takes one output list");
    check_like(outputs[0], input, getSize(), "allgather");
    Tensors parts = outputs[0];
    return enqueue(c10d::OpType::ALLGATHER, parts, [this, input, parts]() mutable {
      at::Tensor gathered = at::empty({getSize() * input.numel()}, input.options());
      gather_into(gathered, input);
      split_into(parts, gathered);
    });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &) override {
    check_tensor(input, "all_gather_into_tensor");
    check_tensor(output, "all_gather_into_tensor");
    TORCH_CHECK(
        output.numel() == getSize() * input.numel() && output.scalar_type() == input.scalar_type(),
        "bagua backend: all_gather_into_tensor needs an output of ", getSize(),
        " times the input's elements, same dtype");
    at::Tensor out = output, in = input;
    return enqueue(c10d::OpType::_ALLGATHER_BASE, {output},
                   [this, out, in]() mutable { gather_into(out, in); });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      Tensors &outputs, Tensors &inputs, const c10d::AllgatherOptions &) override {
    check_pairs(outputs, inputs, getSize(), 1, "all_gather_into_tensor (coalesced)");
    return enqueue(c10d::OpType::COALESCED, outputs, [this, outputs, inputs]() mutable {
      for (size_t i = 0; i < outputs.size(); ++i) gather_into(outputs[i], inputs[i]);
    });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<Tensors> &outputs, Tensors &inputs,
                                        const c10d::GatherOptions &opts) override {
    at::Tensor input = single(inputs, "gather");
    const int root = checked_root(opts.rootRank, "gather");
    Tensors parts = root_list(outputs, root, "gather", "output");
    if (!parts.empty()) check_like(parts, input, getSize(), "gather");
    const int bytes = byte_count(input, 1, "gather");
    return enqueue(c10d::OpType::GATHER, parts, [this, input, parts, root, bytes]() mutable {
      at::Tensor gathered =
          parts.empty() ? at::Tensor() : at::empty({getSize() * input.numel()}, input.options());
      check_mpi_call(MPI_Gather(input.data_ptr(), bytes, MPI_BYTE,
                                parts.empty() ? nullptr : gathered.data_ptr(), bytes, MPI_BYTE,
                                root, mpi_comm_),
                     "MPI_Gather");
      if (!parts.empty()) split_into(parts, gathered);
    });
  }

  c10::intrusive_ptr<c10d::Work> scatter(Tensors &outputs, std::vector<Tensors> &inputs,
                                         const c10d::ScatterOptions &opts) override {
    at::Tensor output = single(outputs, "scatter");
    const int root = checked_root(opts.rootRank, "scatter");
    const Tensors parts = root_list(inputs, root, "scatter", "input");
    at::Tensor whole;
    if (!parts.empty()) {
      check_like(parts, output, getSize(), "scatter");
      whole = concatenated(parts);
    }
    const int bytes = byte_count(output, 1, "scatter");
    return enqueue(c10d::OpType::SCATTER, outputs, [this, output, whole, root, bytes] {
      check_mpi_call(MPI_Scatter(whole.defined() ? whole.data_ptr() : nullptr, bytes, MPI_BYTE,
                                 output.data_ptr(), bytes, MPI_BYTE, root, mpi_comm_),
                     "MPI_Scatter");
    });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<Tensors> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override {
    at::Tensor output = single(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1, "bagua backend: reduce_scatter takes one input list");
    check_like(inputs[0], output, getSize(), "reduce_scatter");
    return reduce_scatter_of(output, concatenated(inputs[0]), opts.reduceOp, outputs);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override {
    check_tensor(input, "reduce_scatter_tensor");
    check_tensor(output, "reduce_scatter_tensor");
    TORCH_CHECK(
        input.numel() == getSize() * output.numel() && output.scalar_type() == input.scalar_type(),
        "bagua backend: reduce_scatter_tensor needs an input of ", getSize(),
        " times the output's elements, same dtype");
    return reduce_scatter_of(output, input, opts.reduceOp, {output});
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      Tensors &outputs, Tensors &inputs, const c10d::ReduceScatterOptions &opts) override {
    check_pairs(outputs, inputs, 1, getSize(), "reduce_scatter_tensor (coalesced)");
    for (const at::Tensor &input : inputs) reduction_op(opts.reduceOp, input.scalar_type());
    const RedOp op = opts.reduceOp;
    return enqueue(c10d::OpType::COALESCED, outputs, [this, outputs, inputs, op]() mutable {
      for (size_t i = 0; i < outputs.size(); ++i) reduce_scatter_now(outputs[i], inputs[i], op);
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &output_splits,
                                               std::vector<int64_t> &input_splits,
                                               const c10d::AllToAllOptions &) override {
    check_tensor(input, "all_to_all_single");
    check_tensor(output, "all_to_all_single");
    TORCH_CHECK(output.scalar_type() == input.scalar_type(),
                "bagua backend: all_to_all_single needs input and output of one dtype");
    byte_count(input, 1, "all_to_all_single");
    byte_count(output, 1, "all_to_all_single");
    const std::vector<int> send = split_bytes(input, input_splits, "input");
    const std::vector<int> recv = split_bytes(output, output_splits, "output");
    at::Tensor out = output, in = input;
    return enqueue(c10d::OpType::ALLTOALL_BASE, {output}, [this, out, in, send, recv] {
      const std::vector<int> send_at = offsets(send), recv_at = offsets(recv);
      check_mpi_call(
          MPI_Alltoallv(in.data_ptr(), send.data(), send_at.data(), MPI_BYTE, out.data_ptr(),
                        recv.data(), recv_at.data(), MPI_BYTE, mpi_comm_),
          "MPI_Alltoallv");
    });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(Tensors &outputs, Tensors &inputs,
                                          const c10d::AllToAllOptions &) override {
    TORCH_CHECK(static_cast<int>(outputs.size()) == getSize() &&
                    static_cast<int>(inputs.size()) == getSize(),
                "bagua backend: all_to_all needs ", getSize(), " input and output tensors");
    std::vector<int> send, recv;
    for (int r = 0; r < getSize(); ++r) {
      check_tensor(inputs[r], "all_to_all");
      check_tensor(outputs[r], "all_to_all");
      TORCH_CHECK(inputs[r].scalar_type() == outputs[r].scalar_type(),
                  "bagua backend: all_to_all needs inputs and outputs of one dtype");
      send.push_back(byte_count(inputs[r], 1, "all_to_all"));
      recv.push_back(byte_count(outputs[r], 1, "all_to_all"));
    }
    const at::Tensor whole = concatenated(inputs);
    Tensors parts = outputs;
    return enqueue(c10d::OpType::ALLTOALL, outputs, [this, whole, parts, send, recv]() mutable {
      const std::vector<int> send_at = offsets(send), recv_at = offsets(recv);
      at::Tensor received = at::empty({recv_at.back() + recv.back()}, at::kByte);
      check_mpi_call(
          MPI_Alltoallv(whole.data_ptr(), send.data(), send_at.data(), MPI_BYTE,
                        received.data_ptr(), recv.data(), recv_at.data(), MPI_BYTE, mpi_comm_),
          "MPI_Alltoallv");
      for (int r = 0; r < getSize(); ++r)
        parts[r].view({-1}).view(at::kByte).copy_(received.narrow(0, recv_at[r], recv[r]));
    });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override {
    return enqueue(c10d::OpType::BARRIER, {},
                   [this] { check_mpi_call(MPI_Barrier(mpi_comm_), "MPI_Barrier"); });
  }

  c10::intrusive_ptr<c10d::Work> send(Tensors &tensors, int dst, int tag) override {
    return point_to_point(tensors, dst, tag, c10d::OpType::SEND);
  }

  c10::intrusive_ptr<c10d::Work> recv(Tensors &tensors, int src, int tag) override {
    return point_to_point(tensors, src, tag, c10d::OpType::RECV);
  }

 private:
  // Queues `job` behind the collectives already issued; its Work completes
  // with `outputs` (or the job's exception).
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const Tensors &outputs,
                                         std::function<void()> job) {
    auto work = c10::make_intrusive<QueuedWork>(getRank(), type, outputs);
    worker_.submit([work, job = std::move(job)] {
      std::exception_ptr error;
      try {
        job();
      } catch (...) {
        error = std::current_exception();
      }
      work->finish_with(error);
    });
    return work;
  }

  // MPI_Isend (type SEND) or MPI_Irecv of the tensor's bytes, completed by the Work's wait().
  c10::intrusive_ptr<c10d::Work> point_to_point(Tensors &tensors, int peer, int tag,
                                                c10d::OpType type) {
    const bool sending = type == c10d::OpType::SEND;
    const char *call = sending ? "send" : "recv";
    const at::Tensor &t = single(tensors, call);
    checked_root(peer, call);
    const int bytes = byte_count(t, 1, call);
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi_call(sending
                       ? MPI_Isend(t.data_ptr(), bytes, MPI_BYTE, peer, tag, mpi_comm_, &request)
                       : MPI_Irecv(t.data_ptr(), bytes, MPI_BYTE, peer, tag, mpi_comm_, &request),
                   sending ? "MPI_Isend" : "MPI_Irecv");
    return c10::make_intrusive<PointToPointWork>(getRank(), type, t, request);
  }

  // The one list of tensors a rooted call takes at its root (none elsewhere).
  Tensors root_list(const std::vector<Tensors> &lists, int root, const char *call,
                    const char *what) const {
    const bool at_root = getRank() == root;
    TORCH_CHECK(lists.size() == (at_root ? 1u : 0u), "bagua backend: ", call, " takes ",
                at_root ? "one " : "no ", what, " list ", at_root ? "at" : "off", " the root");
    return at_root ? lists[0] : Tensors{};
  }

  int checked_root(int64_t rank, const char *call) const {
    TORCH_CHECK(rank >= 0 && rank < getSize(), "bagua backend: ", call, ": rank ", rank,
                " is not in the group of ", getSize());
    return static_cast<int>(rank);
  }

  // Floating sums take the group's wire; the other floating reductions exact
  // bagua; integers, booleans and products MPI's own allreduce.
  void allreduce_now(at::Tensor &t, RedOp op) {
    const bool sum = op == RedOp::SUM || op == RedOp::AVG;
    const MPI_Datatype relaxed = algorithm_datatype(algorithm_, t.scalar_type());
    const MPI_Datatype exact = algorithm_datatype(Algorithm::exact, t.scalar_type());
    if (sum && relaxed != MPI_DATATYPE_NULL) {
      check_bagua(run_allreduce(algorithm_, t, relaxed, op == RedOp::AVG ? BAGUA_AVG : MPI_SUM,
                                mpi_comm_, nullptr),
                  algorithm_call(algorithm_));
    } else if ((sum || op == RedOp::MIN || op == RedOp::MAX) && exact != MPI_DATATYPE_NULL) {
      const MPI_Op mpi_op = op == RedOp::MIN ? MPI_MIN : op == RedOp::MAX ? MPI_MAX : MPI_SUM;
      check_bagua(run_allreduce(Algorithm::exact, t, exact, op == RedOp::AVG ? BAGUA_AVG : mpi_op,
                                mpi_comm_, nullptr),
                  "bagua_allreduce");
    } else {
      check_mpi_call(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()),
                                   reduction_datatype(t.scalar_type()),
                                   reduction_op(op, t.scalar_type()), mpi_comm_),
                     "MPI_Allreduce");
    }
  }

  // MPI_Allgather of input's bytes into the contiguous `output`.
  void gather_into(at::Tensor &output, const at::Tensor &input) {
    const int bytes = byte_count(input, 1, "allgather");
    byte_count(output, 1, "allgather");
    check_mpi_call(MPI_Allgather(input.data_ptr(), bytes, MPI_BYTE, output.data_ptr(), bytes,
                                 MPI_BYTE, mpi_comm_),
                   "MPI_Allgather");
  }

  // Rank r's output: the reduction over ranks of chunk r of `input`.
  c10::intrusive_ptr<c10d::Work> reduce_scatter_of(at::Tensor output, at::Tensor input, RedOp op,
                                                   const Tensors &outputs) {
    byte_count(input, 1, "reduce_scatter");
    reduction_op(op, input.scalar_type());
    return enqueue(c10d::OpType::REDUCE_SCATTER, outputs,
                   [this, output, input, op]() mutable { reduce_scatter_now(output, input, op); });
  }

  void reduce_scatter_now(at::Tensor &output, const at::Tensor &input, RedOp op) {
    check_mpi_call(MPI_Reduce_scatter_block(input.data_ptr(), output.data_ptr(),
                                            static_cast<int>(output.numel()),
                                            reduction_datatype(input.scalar_type()),
                                            reduction_op(op, input.scalar_type()), mpi_comm_),
                   "MPI_Reduce_scatter_block");
    if (op == RedOp::AVG) output.div_(getSize());
  }

  // Output i holds `out_times` and input i `in_times` the elements of the
  // other one of the pair; one dtype per pair.
  void check_pairs(const Tensors &outputs, const Tensors &inputs, int out_times, int in_times,
                   const char *call) const {
    TORCH_CHECK(outputs.size() == inputs.size(), "bagua backend: ", call,
                " takes as many outputs (", outputs.size(), ") as inputs (", inputs.size(), ")");
    for (size_t i = 0; i < outputs.size(); ++i) {
      check_tensor(outputs[i], call);
      check_tensor(inputs[i], call);
      TORCH_CHECK(outputs[i].numel() * in_times == inputs[i].numel() * out_times &&
                      outputs[i].scalar_type() == inputs[i].scalar_type(),
                  "bagua backend: ", call, ": pair ", i, " needs ",
                  out_times > 1 ? "an output of " : "an input of ", getSize(),
                  " times the other's elements, same dtype");
      byte_count(outputs[i], 1, call);
      byte_count(inputs[i], 1, call);
    }
  }

  // The bytes of each rank's piece of `t` for all_to_all_single: `splits`
  // (rows of t's first dimension per rank), or equal pieces when empty.
  std::vector<int> split_bytes(const at::Tensor &t, const std::vector<int64_t> &splits,
                               const char *which) const {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const int64_t row_bytes = rows == 0 ? 0 : static_cast<int64_t>(t.nbytes()) / rows;
    std::vector<int> bytes;
    if (splits.empty()) {
      TORCH_CHECK(rows % getSize() == 0, "bagua backend: all_to_all_single: the ", which,
                  "'s first dimension (", rows, ") is not divisible by the group's size ",
                  getSize());
      bytes.assign(getSize(), static_cast<int>(rows / getSize() * row_bytes));
      return bytes;
    }
    TORCH_CHECK(static_cast<int>(splits.size()) == getSize(),
                "bagua backend: all_to_all_single: ", splits.size(), " ", which,
                " split sizes for a group of ", getSize());
    int64_t total = 0;
    for (int64_t s : splits) {
      TORCH_CHECK(s >= 0, "bagua backend: all_to_all_single: negative split size ", s);
      total += s;
      bytes.push_back(static_cast<int>(s * row_bytes));
    }
    TORCH_CHECK(total == rows, "bagua backend: all_to_all_single: the ", which,
                " split sizes add up to ", total, ", not the first dimension ", rows);
    return bytes;
  }

  static std::vector<int> offsets(const std::vector<int> &sizes) {
    std::vector<int> at(sizes.size(), 0);
    for (size_t i = 1; i < sizes.size(); ++i) at[i] = at[i - 1] + sizes[i - 1];
    return at;
  }

  std::shared_ptr<Comm> comm_;
  MPI_Comm mpi_comm_;
  Algorithm algorithm_;
  Worker worker_;  // last: joined before the members its jobs use are destroyed
};

c10::intrusive_ptr<BaguaBackend> create(std::shared_ptr<Comm> comm,
                                        const std::string &algorithm_name) {
  const Algorithm algorithm = parse_algorithm(algorithm_name);
  if (algorithm == Algorithm::sign)
    throw py::value_error(
        "the bagua backend keeps no per-tensor error feedback, so it has no sign allreduce: use "
        "the DDP hook, bagua_torch.register(ddp, 'sign')");
  return c10::make_intrusive<BaguaBackend>(std::move(comm), algorithm);
}

}  // namespace

void define_backend(py::module_ &m) {
  py::class_<BaguaBackend, c10::intrusive_ptr<BaguaBackend>, c10d::Backend>(
      m, "Backend", "The c10d backend 'bagua' on one communicator.")
      .def(py::init(&create), py::arg("comm"), py::arg("algorithm"))
      .def_property_readonly("algorithm", [](const BaguaBackend &backend) {
        return std::string(algorithm_name(backend.algorithm()));
      });
}

}  // namespace bagua_torch
