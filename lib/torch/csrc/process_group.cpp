// The c10d backend "bagua" (doc/pytorch.md): allreduce (the group's bagua
// algorithm for floating sums, else exact), broadcast, allgather, barrier and
// reduce_scatter on an MPI communicator; c10d's base class refuses the other
// collectives with "does not support". c10d calls these without the GIL, so
// nothing here touches Python; each call runs to completion on the caller's
// thread and returns a completed Work.
#include <climits>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "common.hpp"

namespace py = pybind11;

namespace bagua_torch {
namespace {

using RedOp = c10d::ReduceOp::RedOpType;

c10::intrusive_ptr<c10d::Work> completed(const std::vector<at::Tensor> &tensors) {
  auto future =
      c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
  future->markCompleted(c10::IValue(tensors));
  return c10d::Work::create_from_future(future);
}

void check_tensor(const at::Tensor &t, const char *call) {
  const std::string problem = tensor_problem(t);
  TORCH_CHECK(problem.empty(), "bagua backend: ", call, ": the tensor ", problem);
}

// The one tensor of a c10d call (CPU collectives take one per process).
at::Tensor &single(std::vector<at::Tensor> &tensors, const char *call) {
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
      if (integral) return MPI_BAND;
      break;
    case RedOp::BOR:
      if (integral) return MPI_BOR;
      break;
    case RedOp::BXOR:
      if (integral) return MPI_BXOR;
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

// `outputs` must be `size` tensors shaped like `input` (same dtype and numel).
void check_like(const std::vector<at::Tensor> &tensors, const at::Tensor &like, int size,
                const char *call) {
  TORCH_CHECK(static_cast<int>(tensors.size()) == size, "bagua backend: ", call, " needs ", size,
              " tensors in the list, got ", tensors.size());
  for (const at::Tensor &t : tensors)
    TORCH_CHECK(t.defined() && t.device().is_cpu() && t.scalar_type() == like.scalar_type() &&
                    t.numel() == like.numel(),
                "bagua backend: ", call, ": every tensor of the list must be a CPU tensor of ",
                dtype_name(like.scalar_type()), " with ", like.numel(), " elements");
}

class BaguaProcessGroup : public c10d::ProcessGroup {
 public:
  BaguaProcessGroup(std::shared_ptr<Comm> comm, Algorithm algorithm)
      : c10d::ProcessGroup(comm->rank(), comm->size()),
        comm_(std::move(comm)),
        mpi_comm_(comm_->get()),
        algorithm_(algorithm) {}

  const std::string getBackendName() const override { return "bagua"; }
  Algorithm algorithm() const { return algorithm_; }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override {
    at::Tensor &t = single(tensors, "allreduce");
    const RedOp op = opts.reduceOp;
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
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), static_cast<int>(t.numel()),
                              reduction_datatype(t.scalar_type()),
                              reduction_op(op, t.scalar_type()), mpi_comm_),
                "MPI_Allreduce");
    }
    return completed(tensors);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override {
    at::Tensor &t = single(tensors, "broadcast");
    TORCH_CHECK(opts.rootTensor == 0, "bagua backend: broadcast takes one tensor per process");
    check_mpi(MPI_Bcast(t.data_ptr(), byte_count(t, 1, "broadcast"), MPI_BYTE,
                        static_cast<int>(opts.rootRank), mpi_comm_),
              "MPI_Bcast");
    return completed(tensors);
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &) override {
    at::Tensor &input = single(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1, "bagua backend: allgather takes one output list");
    check_like(outputs[0], input, getSize(), "allgather");
    at::Tensor gathered = at::empty({getSize() * input.numel()}, input.options());
    gather_into(gathered, input);
    for (int r = 0; r < getSize(); ++r)
      outputs[0][r].copy_(gathered.narrow(0, r * input.numel(), input.numel()).view_as(input));
    return completed(outputs[0]);
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &) override {
    check_tensor(input, "_allgather_base");
    check_tensor(output, "_allgather_base");
    TORCH_CHECK(
        output.numel() == getSize() * input.numel() && output.scalar_type() == input.scalar_type(),
        "bagua backend: _allgather_base needs an output of ", getSize(),
        " times the input's elements, same dtype");
    gather_into(output, input);
    return completed({output});
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &) override {
    check_mpi(MPI_Barrier(mpi_comm_), "MPI_Barrier");
    return completed({});
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override {
    at::Tensor &output = single(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1, "bagua backend: reduce_scatter takes one input list");
    check_like(inputs[0], output, getSize(), "reduce_scatter");
    std::vector<at::Tensor> flat_inputs;
    for (const at::Tensor &t : inputs[0]) flat_inputs.push_back(t.reshape({-1}));
    scatter_reduced(output, at::cat(flat_inputs), opts.reduceOp);
    return completed(outputs);
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override {
    check_tensor(input, "_reduce_scatter_base");
    check_tensor(output, "_reduce_scatter_base");
    TORCH_CHECK(
        input.numel() == getSize() * output.numel() && output.scalar_type() == input.scalar_type(),
        "bagua backend: _reduce_scatter_base needs an input of ", getSize(),
        " times the output's elements, same dtype");
    scatter_reduced(output, input, opts.reduceOp);
    return completed({output});
  }

 private:
  // MPI_Allgather of input's bytes into the contiguous `output`.
  void gather_into(at::Tensor &output, const at::Tensor &input) {
    const int bytes = byte_count(input, getSize(), "allgather") / getSize();
    check_mpi(MPI_Allgather(input.data_ptr(), bytes, MPI_BYTE, output.data_ptr(), bytes, MPI_BYTE,
                            mpi_comm_),
              "MPI_Allgather");
  }

  // Rank r's output: the reduction over ranks of chunk r of `input`.
  void scatter_reduced(at::Tensor &output, const at::Tensor &input, RedOp op) {
    byte_count(input, 1, "reduce_scatter");
    check_mpi(MPI_Reduce_scatter_block(input.data_ptr(), output.data_ptr(),
                                       static_cast<int>(output.numel()),
                                       reduction_datatype(input.scalar_type()),
                                       reduction_op(op, input.scalar_type()), mpi_comm_),
              "MPI_Reduce_scatter_block");
    if (op == RedOp::AVG) output.div_(getSize());
  }

  std::shared_ptr<Comm> comm_;
  MPI_Comm mpi_comm_;
  Algorithm algorithm_;
};

c10::intrusive_ptr<BaguaProcessGroup> create(std::shared_ptr<Comm> comm,
                                             const std::string &algorithm_name) {
  const Algorithm algorithm = parse_algorithm(algorithm_name);
  if (algorithm == Algorithm::sign)
    throw py::value_error(
        "the bagua backend keeps no per-tensor error feedback, so it has no sign allreduce: use "
        "the DDP hook, bagua_torch.register(ddp, 'sign')");
  return c10::make_intrusive<BaguaProcessGroup>(std::move(comm), algorithm);
}

}  // namespace

void define_process_group(py::module_ &m) {
  py::class_<BaguaProcessGroup, c10::intrusive_ptr<BaguaProcessGroup>, c10d::ProcessGroup>(
      m, "ProcessGroup", "The c10d backend 'bagua' on one communicator.")
      .def(py::init(&create), py::arg("comm"), py::arg("algorithm"))
      .def_property_readonly("algorithm", [](const BaguaProcessGroup &pg) {
        return std::string(algorithm_name(pg.algorithm()));
      });
}

}  // namespace bagua_torch
