// The c10d backend "bagua" (doc/pytorch.md), a c10d::Backend for CPU tensors
// whose every op runs on bagua's own calls (so it works as well on a
// communicator formed without an MPI launcher, bagua_comm_create_oob):
// allreduce (the group's bagua wire for floating sums, exact bagua for the
// other floating sums, minima and maxima; the other reductions reduce an
// allgather locally), broadcast, allgather, all_gather_into_tensor, gather,
// scatter, reduce, reduce_scatter, reduce_scatter_tensor (both also
// coalesced, as FSDP2 calls them), alltoall (uneven splits padded to the
// largest piece), barrier, send and recv. Collectives run on one worker
// thread per backend, in the order the caller issued them (the same on every
// rank), so the caller (DDP's backward) goes on while a bucket is on the wire;
// sends and receives on a second thread and communicator, in issue order, so
// they never wait behind a collective. Every Work completes a future with its
// output tensors.
// c10d calls these without the GIL, so nothing here touches Python.
#include <algorithm>
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

bool is_floating(at::ScalarType type) {
  return type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
}

// Refuses, on the caller's thread, a reduction no path takes: AVG of
// integers, bitwise ops on floating types, anything on complex or other types.
void check_reduction(RedOp op, at::ScalarType type, const char *call) {
  const bool integral = at::isIntegralType(type, /*includeBool=*/true);
  const bool known = integral || is_floating(type);
  const bool bitwise = op == RedOp::BAND || op == RedOp::BOR || op == RedOp::BXOR;
  const bool arithmetic = op == RedOp::SUM || op == RedOp::PRODUCT || op == RedOp::MIN ||
                          op == RedOp::MAX || (op == RedOp::AVG && !integral);
  TORCH_CHECK(known && (integral ? arithmetic || bitwise : arithmetic), "bagua backend: ", call,
              ": reduce op ", static_cast<int>(op), " does not take ", dtype_name(type),
              " tensors");
}

// The reduction over the first dimension of `rows` (one row per rank, in rank
// order, so every rank computes the same bits) by `op`.
at::Tensor reduce_rows(const at::Tensor &rows, RedOp op) {
  const bool boolean = rows.scalar_type() == at::kBool;
  switch (op) {
    case RedOp::SUM:
      return boolean ? rows.any(0) : rows.sum(0, /*keepdim=*/false, rows.scalar_type());
    case RedOp::AVG: return rows.sum(0, false, rows.scalar_type()).div_(rows.size(0));
    case RedOp::PRODUCT:
      return boolean ? rows.all(0) : rows.prod(0, /*keepdim=*/false, rows.scalar_type());
    case RedOp::MIN: return rows.amin(0);
    case RedOp::MAX: return rows.amax(0);
    default: break;
  }
  at::Tensor out = rows[0].clone();
  for (int64_t r = 1; r < rows.size(0); ++r) {
    if (op == RedOp::BAND) out.bitwise_and_(rows[r]);
    if (op == RedOp::BOR) out.bitwise_or_(rows[r]);
    if (op == RedOp::BXOR) out.bitwise_xor_(rows[r]);
  }
  return out;
}

// The MPI op of bagua's exact reductions for `op`, or MPI_OP_NULL where they
// have none.
MPI_Op bagua_op(RedOp op) {
  switch (op) {
    case RedOp::SUM: return MPI_SUM;
    case RedOp::AVG: return BAGUA_AVG;
    case RedOp::MIN: return MPI_MIN;
    case RedOp::MAX: return MPI_MAX;
    default: return MPI_OP_NULL;
  }
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

// Runs queued jobs one at a time, in submission order.
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
  // `messages` holds the same ranks as `comm`, for send and recv alone.
  BaguaBackend(std::shared_ptr<Comm> comm, std::shared_ptr<Comm> messages, Algorithm algorithm)
      : c10d::Backend(comm->rank(), comm->size()),
        comm_(std::move(comm)),
        messages_(std::move(messages)),
        handle_(comm_->get()),
        messages_handle_(messages_->get()),
        algorithm_(algorithm) {
    TORCH_CHECK(messages_->rank() == getRank() && messages_->size() == getSize(),
                "bagua backend: the communicator of send and recv holds other ranks");
  }

  const std::string getBackendName() const override { return "bagua"; }
  Algorithm algorithm() const { return algorithm_; }

  c10::intrusive_ptr<c10d::Work> allreduce(Tensors &tensors,
                                           const c10d::AllreduceOptions &opts) override {
    return reduction(tensors, opts.reduceOp, c10d::OpType::ALLREDUCE, "allreduce");
  }

  // Every rank reduces (the allreduce's path); the root's tensor is the result.
  c10::intrusive_ptr<c10d::Work> reduce(Tensors &tensors,
                                        const c10d::ReduceOptions &opts) override {
    checked_rank(opts.rootRank, "reduce");
    return reduction(tensors, opts.reduceOp, c10d::OpType::REDUCE, "reduce");
  }

  c10::intrusive_ptr<c10d::Work> broadcast(Tensors &tensors,
                                           const c10d::BroadcastOptions &opts) override {
    at::Tensor t = single(tensors, "broadcast");
    TORCH_CHECK(opts.rootTensor == 0, "bagua backend: broadcast takes one tensor per process");
    const int root = checked_rank(opts.rootRank, "broadcast");
    const int bytes = byte_count(t, 1, "broadcast");
    return enqueue(collectives_, c10d::OpType::BROADCAST, tensors, [this, t, root, bytes] {
      check_bagua(bagua_bcast(t.data_ptr(), bytes, MPI_BYTE, root, handle_), "bagua_bcast");
    });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<Tensors> &outputs, Tensors &inputs,
                                           const c10d::AllgatherOptions &) override {
    at::Tensor input = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1, "bagua backend: allgather takes one output list");
    check_like(outputs[0], input, getSize(), "allgather");
    Tensors parts = outputs[0];
    return enqueue(collectives_, c10d::OpType::ALLGATHER, parts,
                   [this, input, parts]() mutable { split_into(parts, gathered(input)); });
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &) override {
    Tensors outputs{output}, inputs{input};
    check_pairs(outputs, inputs, getSize(), 1, "all_gather_into_tensor");
    at::Tensor out = output, in = input;
    return enqueue(collectives_, c10d::OpType::_ALLGATHER_BASE, outputs,
                   [this, out, in]() mutable { gather_into(out, in); });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      Tensors &outputs, Tensors &inputs, const c10d::AllgatherOptions &) override {
    check_pairs(outputs, inputs, getSize(), 1, "all_gather_into_tensor (coalesced)");
    return enqueue(collectives_, c10d::OpType::COALESCED, outputs,
                   [this, outputs, inputs]() mutable {
                     for (size_t i = 0; i < outputs.size(); ++i) gather_into(outputs[i], inputs[i]);
                   });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<Tensors> &outputs, Tensors &inputs,
                                        const c10d::GatherOptions &opts) override {
    at::Tensor input = single(inputs, "gather");
    const int root = checked_rank(opts.rootRank, "gather");
    Tensors parts = root_list(outputs, root, "gather", "output");
    if (!parts.empty()) check_like(parts, input, getSize(), "gather");
    const int bytes = byte_count(input, 1, "gather");
    return enqueue(
        collectives_, c10d::OpType::GATHER, parts, [this, input, parts, root, bytes]() mutable {
          at::Tensor whole = parts.empty()
                                 ? at::Tensor()
                                 : at::empty({getSize() * input.numel()}, input.options());
          check_bagua(bagua_gather(input.data_ptr(), bytes, MPI_BYTE,
                                   parts.empty() ? nullptr : whole.data_ptr(), bytes, MPI_BYTE,
                                   root, handle_),
                      "bagua_gather");
          if (!parts.empty()) split_into(parts, whole);
        });
  }

  c10::intrusive_ptr<c10d::Work> scatter(Tensors &outputs, std::vector<Tensors> &inputs,
                                         const c10d::ScatterOptions &opts) override {
    at::Tensor output = single(outputs, "scatter");
    const int root = checked_rank(opts.rootRank, "scatter");
    const Tensors parts = root_list(inputs, root, "scatter", "input");
    at::Tensor whole;
    if (!parts.empty()) {
      check_like(parts, output, getSize(), "scatter");
      whole = concatenated(parts);
    }
    const int bytes = byte_count(output, 1, "scatter");
    return enqueue(
        collectives_, c10d::OpType::SCATTER, outputs, [this, output, whole, root, bytes] {
          check_bagua(bagua_scatter(whole.defined() ? whole.data_ptr() : nullptr, bytes, MPI_BYTE,
                                    output.data_ptr(), bytes, MPI_BYTE, root, handle_),
                      "bagua_scatter");
        });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<Tensors> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override {
    at::Tensor output = single(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1, "bagua backend: reduce_scatter takes one input list");
    check_like(inputs[0], output, getSize(), "reduce_scatter");
    Tensors flat_inputs{concatenated(inputs[0])};
    return reduce_scatter_of(outputs, flat_inputs, opts.reduceOp, c10d::OpType::REDUCE_SCATTER);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override {
    Tensors outputs{output}, inputs{input};
    return reduce_scatter_of(outputs, inputs, opts.reduceOp, c10d::OpType::_REDUCE_SCATTER_BASE);
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      Tensors &outputs, Tensors &inputs, const c10d::ReduceScatterOptions &opts) override {
    return reduce_scatter_of(outputs, inputs, opts.reduceOp, c10d::OpType::COALESCED);
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &output_splits,
                                               std::vector<int64_t> &input_splits,
                                               const c10d::AllToAllOptions &) override {
    check_tensor(input, "all_to_all_single");
    check_tensor(output, "all_to_all_single");
    TORCH_CHECK(output.scalar_type() == input.scalar_type(),
                "bagua backend: all_to_all_single needs input and output of one dtype");
    Exchange exchange{{input.reshape({-1})},
                      {output.view({-1})},
                      split_bytes(input, input_splits, "input"),
                      split_bytes(output, output_splits, "output")};
    // Equal pieces from separate buffers go straight through bagua_alltoall.
    const bool even = input_splits.empty() && output_splits.empty() &&
                      exchange.send_bytes == exchange.recv_bytes &&
                      input.data_ptr() != output.data_ptr();
    if (even) {
      at::Tensor out = output, in = input;
      const int block = exchange.send_bytes[0];
      return enqueue(collectives_, c10d::OpType::ALLTOALL_BASE, {output}, [this, out, in, block] {
        check_bagua(bagua_alltoall(in.data_ptr(), block, MPI_BYTE, out.data_ptr(), block, MPI_BYTE,
                                   handle_),
                    "bagua_alltoall");
      });
    }
    return enqueue(collectives_, c10d::OpType::ALLTOALL_BASE, {output},
                   [this, exchange]() mutable { exchange_now(exchange); });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(Tensors &outputs, Tensors &inputs,
                                          const c10d::AllToAllOptions &) override {
    TORCH_CHECK(static_cast<int>(outputs.size()) == getSize() &&
                    static_cast<int>(inputs.size()) == getSize(),
                "bagua backend: all_to_all needs ", getSize(), " input and output tensors");
    Exchange exchange;
    for (int r = 0; r < getSize(); ++r) {
      check_tensor(inputs[r], "all_to_all");
      check_tensor(outputs[r], "all_to_all");
      TORCH_CHECK(inputs[r].scalar_type() == outputs[r].scalar_type(),
                  "bagua backend: all_to_all needs inputs and outputs of one dtype");
      exchange.send_bytes.push_back(byte_count(inputs[r], 1, "all_to_all"));
      exchange.recv_bytes.push_back(byte_count(outputs[r], 1, "all_to_all"));
    }
    exchange.sources = {concatenated(inputs)};
    exchange.targets = outputs;
    return enqueue(collectives_, c10d::OpType::ALLTOALL, outputs,
                   [this, exchange]() mutable { exchange_now(exchange); });
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override {
    return enqueue(collectives_, c10d::OpType::BARRIER, {},
                   [this] { check_bagua(bagua_barrier(handle_), "bagua_barrier"); });
  }

  c10::intrusive_ptr<c10d::Work> send(Tensors &tensors, int dst, int tag) override {
    const at::Tensor t = single(tensors, "send");
    const int bytes = point_to_point_bytes(t, dst, tag, "send");
    return enqueue(messages_worker_, c10d::OpType::SEND, tensors, [this, t, dst, tag, bytes] {
      check_bagua(bagua_send(t.data_ptr(), bytes, MPI_BYTE, dst, tag, messages_handle_),
                  "bagua_send");
    });
  }

  c10::intrusive_ptr<c10d::Work> recv(Tensors &tensors, int src, int tag) override {
    const at::Tensor t = single(tensors, "recv");
    const int bytes = point_to_point_bytes(t, src, tag, "recv");
    return enqueue(messages_worker_, c10d::OpType::RECV, tensors, [this, t, src, tag, bytes] {
      check_bagua(bagua_recv(t.data_ptr(), bytes, MPI_BYTE, src, tag, messages_handle_),
                  "bagua_recv");
    });
  }

 private:
  // The pieces of an all-to-all: flat byte views of what is sent (one tensor,
  // the pieces one after another) and of where each received piece goes (one
  // tensor, or one per rank), and each piece's bytes.
  struct Exchange {
    Tensors sources, targets;
    std::vector<int> send_bytes, recv_bytes;
  };

  // Queues `job` on `worker` behind the jobs already there; its Work completes
  // with `outputs` (or the job's exception).
  c10::intrusive_ptr<c10d::Work> enqueue(Worker &worker, c10d::OpType type, const Tensors &outputs,
                                         std::function<void()> job) {
    auto work = c10::make_intrusive<QueuedWork>(getRank(), type, outputs);
    worker.submit([work, job = std::move(job)] {
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

  // The allreduce of the one tensor in `tensors` by `op` (checked here).
  c10::intrusive_ptr<c10d::Work> reduction(Tensors &tensors, RedOp op, c10d::OpType type,
                                           const char *call) {
    at::Tensor t = single(tensors, call);
    check_reduction(op, t.scalar_type(), call);
    return enqueue(collectives_, type, tensors, [this, t, op]() mutable { allreduce_now(t, op); });
  }

  int checked_rank(int64_t rank, const char *call) const {
    TORCH_CHECK(rank >= 0 && rank < getSize(), "bagua backend: ", call, ": rank ", rank,
                " is not in the group of ", getSize());
    return static_cast<int>(rank);
  }

  int point_to_point_bytes(const at::Tensor &t, int peer, int tag, const char *call) const {
    checked_rank(peer, call);
    TORCH_CHECK(peer != getRank(), "bagua backend: ", call, " to or from this rank itself");
    TORCH_CHECK(tag >= 0 && tag <= 32767, "bagua backend: ", call, ": tag ", tag,
                " is outside [0, 32767]");
    return byte_count(t, 1, call);
  }

  // The one list of tensors a rooted call takes at its root (none elsewhere).
  Tensors root_list(const std::vector<Tensors> &lists, int root, const char *call,
                    const char *what) const {
    const bool at_root = getRank() == root;
    TORCH_CHECK(lists.size() == (at_root ? 1u : 0u), "bagua backend: ", call, " takes ",
                at_root ? "one " : "no ", what, " list ", at_root ? "at" : "off", " the root");
    return at_root ? lists[0] : Tensors{};
  }

  // Floating sums take the group's wire; floating sums, minima and maxima
  // that it does not take exact bagua; everything else reduces an allgather.
  void allreduce_now(at::Tensor &t, RedOp op) {
    const MPI_Datatype relaxed = algorithm_datatype(algorithm_, t.scalar_type());
    const MPI_Datatype exact = algorithm_datatype(BAGUA_ALGORITHM_EXACT, t.scalar_type());
    const MPI_Op mpi_op = bagua_op(op);
    if ((op == RedOp::SUM || op == RedOp::AVG) && relaxed != MPI_DATATYPE_NULL) {
      check_bagua(run_allreduce(algorithm_, t, relaxed, mpi_op, handle_, nullptr),
                  algorithm_call(algorithm_));
    } else if (mpi_op != MPI_OP_NULL && exact != MPI_DATATYPE_NULL) {
      check_bagua(run_allreduce(BAGUA_ALGORITHM_EXACT, t, exact, mpi_op, handle_, nullptr),
                  "bagua_allreduce");
    } else {
      t.view({-1}).copy_(reduce_rows(gathered(t).view({getSize(), -1}), op));
    }
  }

  // Every rank's `input`, one after another (bagua_allgather of its bytes).
  at::Tensor gathered(const at::Tensor &input) {
    at::Tensor out = at::empty({getSize() * input.numel()}, input.options());
    gather_into(out, input);
    return out;
  }

  // bagua_allgather of input's bytes into `output`; in place when `input` is
  // this rank's block of it (FSDP2's all-gathers), through a copy when it
  // overlaps it otherwise.
  void gather_into(at::Tensor &output, const at::Tensor &input) {
    const int bytes = byte_count(input, 1, "allgather");
    byte_count(output, 1, "allgather");
    auto *const out = static_cast<char *>(output.data_ptr());
    const auto *in = static_cast<const char *>(input.data_ptr());
    const void *send = in == out + static_cast<ptrdiff_t>(bytes) * getRank() ? MPI_IN_PLACE : in;
    at::Tensor copy;
    if (send != MPI_IN_PLACE && in < out + output.nbytes() && out < in + bytes) {
      copy = input.clone();
      send = copy.data_ptr();
    }
    check_bagua(bagua_allgather(send, bytes, MPI_BYTE, out, bytes, MPI_BYTE, handle_),
                "bagua_allgather");
  }

  // Output i: the reduction over ranks of this rank's chunk of input i.
  c10::intrusive_ptr<c10d::Work> reduce_scatter_of(const Tensors &outputs, const Tensors &inputs,
                                                   RedOp op, c10d::OpType type) {
    check_pairs(outputs, inputs, 1, getSize(), "reduce_scatter");
    for (const at::Tensor &input : inputs)
      check_reduction(op, input.scalar_type(), "reduce_scatter");
    return enqueue(collectives_, type, outputs, [this, outputs, inputs, op]() mutable {
      for (size_t i = 0; i < outputs.size(); ++i) reduce_scatter_now(outputs[i], inputs[i], op);
    });
  }

  // Floating types with bagua's ops: bagua_reduce_scatter_block; the rest
  // reduce an allgather.
  void reduce_scatter_now(const at::Tensor &output, const at::Tensor &input, RedOp op) {
    const MPI_Datatype exact = algorithm_datatype(BAGUA_ALGORITHM_EXACT, input.scalar_type());
    const MPI_Op mpi_op = op == RedOp::PRODUCT ? MPI_PROD : bagua_op(op);
    if (exact != MPI_DATATYPE_NULL && mpi_op != MPI_OP_NULL) {
      check_bagua(
          bagua_reduce_scatter_block(input.data_ptr(), output.data_ptr(),
                                     static_cast<int>(output.numel()), exact, mpi_op, handle_),
          "bagua_reduce_scatter_block");
      return;
    }
    const at::Tensor rows = gathered(input).view({getSize(), getSize(), -1});
    output.view({-1}).copy_(reduce_rows(rows.select(1, getRank()), op));
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

  // An all-to-all of pieces of any size: every rank sends blocks of the
  // largest piece any rank sends (agreed by an allgather), padded, through
  // bagua_alltoall, and copies the received pieces out of them.
  void exchange_now(Exchange &x) {
    const int n = getSize();
    const int largest = *std::max_element(x.send_bytes.begin(), x.send_bytes.end());
    const at::Tensor largests = gathered(at::full({1}, largest, at::kInt));
    const int block = largests.max().item<int>();
    TORCH_CHECK(static_cast<int64_t>(block) * n <= INT_MAX,
                "bagua backend: all_to_all: more than 2^31 - 1 bytes in its padded blocks");
    at::Tensor out = at::empty({n, block}, at::kByte), in = at::zeros({n, block}, at::kByte);
    const at::Tensor source = x.sources[0].view({-1}).view(at::kByte);
    const std::vector<int> send_at = offsets(x.send_bytes), recv_at = offsets(x.recv_bytes);
    for (int r = 0; r < n; ++r)
      in[r].narrow(0, 0, x.send_bytes[r]).copy_(source.narrow(0, send_at[r], x.send_bytes[r]));
    check_bagua(
        bagua_alltoall(in.data_ptr(), block, MPI_BYTE, out.data_ptr(), block, MPI_BYTE, handle_),
        "bagua_alltoall");
    // One target (all_to_all_single) takes the pieces one after another.
    for (int r = 0; r < n; ++r) {
      at::Tensor target = x.targets.size() == 1
                              ? x.targets[0].view(at::kByte).narrow(0, recv_at[r], x.recv_bytes[r])
                              : x.targets[r].view({-1}).view(at::kByte);
      target.copy_(out[r].narrow(0, 0, x.recv_bytes[r]));
    }
  }

  // The bytes of each rank's piece of `t` for all_to_all_single: `splits`
  // (rows of t's first dimension per rank), or equal pieces when empty.
  std::vector<int> split_bytes(const at::Tensor &t, const std::vector<int64_t> &splits,
                               const char *which) const {
    byte_count(t, 1, "all_to_all_single");
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

  std::shared_ptr<Comm> comm_, messages_;
  MPI_Comm handle_, messages_handle_;
  Algorithm algorithm_;
  // Last: joined before the members their jobs use are destroyed.
  Worker collectives_, messages_worker_;
};

c10::intrusive_ptr<BaguaBackend> create(std::shared_ptr<Comm> comm, std::shared_ptr<Comm> messages,
                                        const std::string &algorithm_name) {
  const Algorithm algorithm = parse_algorithm(algorithm_name);
  if (has_state(algorithm))
    throw py::value_error(
        "the bagua backend keeps no per-tensor error feedback, so it has no sign allreduce: use "
        "the DDP hook, bagua_torch.register(ddp, 'sign')");
  return c10::make_intrusive<BaguaBackend>(std::move(comm), std::move(messages), algorithm);
}

}  // namespace

void define_backend(py::module_ &m) {
  py::class_<BaguaBackend, c10::intrusive_ptr<BaguaBackend>, c10d::Backend>(
      m, "Backend", "The c10d backend 'bagua' on one communicator.")
      .def(py::init(&create), py::arg("comm"), py::arg("messages"), py::arg("algorithm"))
      .def_property_readonly("algorithm", [](const BaguaBackend &backend) {
        return std::string(algorithm_name(backend.algorithm()));
      });
}

}  // namespace bagua_torch
