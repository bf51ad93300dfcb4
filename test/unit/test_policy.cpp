// The selection policy, the support matrix, the tag layout and the auto
// piece size: decisions as data, checked without MPI.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "../wire_ids.hpp"
#include "core/select.hpp"
#include "core/support.hpp"
#include "core/tags.hpp"
#include "transport/mpi_transport.hpp"

using namespace bagua;

namespace {

Schedule selected(const SelectionSettings &s, Family f, Wire w, size_t bytes,
                  Memory m = Memory::host) {
  const ScheduleInfo *out = nullptr;
  REQUIRE(SelectionPolicy(s).select(f, w, bytes, m, &out) == BAGUA_SUCCESS);
  return out->id;
}

std::string message() { return last_error_message(); }

}  // namespace

TEST_CASE("exact: recursive doubling below the ring threshold, the ring from it", "[policy]") {
  SelectionSettings s;
  s.ring_threshold_bytes = 1000;
  for (Family f : {Family::allreduce, Family::iallreduce, Family::bucket, Family::async}) {
    CHECK(selected(s, f, Wire::exact, 0) == Schedule::recursive_doubling);
    CHECK(selected(s, f, Wire::exact, 999) == Schedule::recursive_doubling);
    CHECK(selected(s, f, Wire::exact, 1000) == Schedule::ring);
    CHECK(selected(s, f, Wire::exact, size_t(1) << 40) == Schedule::ring);
  }
  s.ring_threshold_bytes = 0;  // the ring for every size
  CHECK(selected(s, Family::allreduce, Wire::exact, 0) == Schedule::ring);
}

TEST_CASE("BAGUA_ALLREDUCE_ALGO forces one exact schedule for every size", "[policy]") {
  SelectionSettings s;
  s.exact_algo = AllreduceAlgo::ring;
  CHECK(selected(s, Family::allreduce, Wire::exact, 8) == Schedule::ring);
  s.exact_algo = AllreduceAlgo::recursive_doubling;
  CHECK(selected(s, Family::bucket, Wire::exact, size_t(1) << 30) == Schedule::recursive_doubling);
}

TEST_CASE("compressed wires run ByteGrad; hierarchical only for the blocking calls", "[policy]") {
  SelectionSettings s;
  for (Wire w : {wire::q8, wire::q4, wire::fp16, wire::bf16, wire::sign})
    CHECK(selected(s, Family::allreduce, w, 4) == Schedule::bytegrad);
  for (Wire w : {wire::q8, wire::q4, wire::fp16, wire::bf16, wire::sign})
    CHECK(selected(s, Family::allreduce, w, 4, Memory::cuda) == Schedule::bytegrad);
  s.hierarchical = true;
  CHECK(selected(s, Family::allreduce, wire::q8, 4) == Schedule::hierarchical);
  CHECK(selected(s, Family::bucket, wire::q8, 4) == Schedule::bytegrad);
  CHECK(selected(s, Family::partial, wire::q8, 4) == Schedule::bytegrad);
  const ScheduleInfo *out = nullptr;
  CHECK(SelectionPolicy(s).select(Family::allreduce, wire::q8, 4, Memory::cuda, &out) ==
        BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(message().find("BAGUA_HIERARCHICAL=1") != std::string::npos);
}

TEST_CASE("exact allreduce has no device schedule", "[policy]") {
  const ScheduleInfo *out = nullptr;
  CHECK(SelectionPolicy().select(Family::allreduce, Wire::exact, 64, Memory::cuda, &out) ==
        BAGUA_ERR_INVALID_ARGUMENT);
}

TEST_CASE("device buffers run on the device only with the blocking allreduce's codecs",
          "[policy]") {
  SelectionSettings s;
  for (Wire w : {wire::q8, wire::q4, wire::fp16, wire::bf16, wire::sign})
    CHECK(SelectionPolicy(s).runs_on_device(Family::allreduce, w, 1 << 20));
  // exact has no device reduction.
  CHECK_FALSE(SelectionPolicy(s).runs_on_device(Family::allreduce, Wire::exact, 1 << 20));
  // Partial reduce may weight its contribution on the host; low precision
  // runs its own ring; decentralized averaging is exact.
  CHECK_FALSE(SelectionPolicy(s).runs_on_device(Family::partial, wire::q8, 1 << 20));
  CHECK_FALSE(SelectionPolicy(s).runs_on_device(Family::lowprec, wire::q8, 1 << 20));
  CHECK_FALSE(SelectionPolicy(s).runs_on_device(Family::decentralized, Wire::exact, 1 << 20));
  s.hierarchical = true;
  CHECK_FALSE(SelectionPolicy(s).runs_on_device(Family::allreduce, wire::q8, 1 << 20));
}

TEST_CASE("device buffers: every family takes them", "[support]") {
  for (Family f : {Family::allreduce, Family::partial, Family::decentralized, Family::bucket,
                   Family::iallreduce, Family::async})
    CHECK(check_support(f, Wire::exact, DType::f32, ReduceOp::avg, Memory::cuda) == BAGUA_SUCCESS);
  CHECK(check_support(Family::allreduce, wire::sign, DType::f32, ReduceOp::avg, Memory::cuda) ==
        BAGUA_SUCCESS);
  CHECK(check_support(Family::lowprec, wire::q8, DType::f32, ReduceOp::avg, Memory::cuda) ==
        BAGUA_SUCCESS);
}

TEST_CASE("the support matrix: codecs take float types and sums; exact takes all", "[support]") {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::avg})
      CHECK(check_support(Family::allreduce, Wire::exact, t, op, Memory::host) == BAGUA_SUCCESS);
  CHECK(check_support(Family::allreduce, wire::q8, DType::f64, ReduceOp::sum, Memory::host) ==
        BAGUA_ERR_UNSUPPORTED_DATATYPE);
  CHECK(message() ==
        "datatype must be MPI_FLOAT, BAGUA_FLOAT16 or BAGUA_BFLOAT16 for q8 (got "
        "MPI_DOUBLE)");
  CHECK(check_support(Family::allreduce, wire::fp16, DType::f32, ReduceOp::max, Memory::host) ==
        BAGUA_ERR_UNSUPPORTED_OP);
  CHECK(message() == "op must be MPI_SUM or BAGUA_AVG for fp16 (got MPI_MAX)");
  CHECK(check_support(Family::allreduce, wire::bf16, DType::bf16, ReduceOp::avg, Memory::cuda) ==
        BAGUA_SUCCESS);
  CHECK(check_support(Family::bucket, wire::sign, DType::f32, ReduceOp::avg, Memory::host) ==
        BAGUA_ERR_INVALID_ARGUMENT);
  CHECK(check_support(Family::lowprec, wire::q8, DType::f64, ReduceOp::avg, Memory::host) ==
        BAGUA_ERR_UNSUPPORTED_DATATYPE);
  CHECK(check_support(Family::reduce_scatter, Wire::exact, DType::bf16, ReduceOp::min,
                      Memory::host) == BAGUA_SUCCESS);
  CHECK(check_support(Family::reduce_scatter, Wire::exact, DType::f32, ReduceOp::sum,
                      Memory::cuda) == BAGUA_ERR_INVALID_ARGUMENT);
}

TEST_CASE("doc/api.md lists the support matrix as the library has it", "[support][doc]") {
  std::ifstream file(std::string(BAGUA_DOC_DIR) + "/api.md");
  std::stringstream text;
  text << file.rdbuf();
  for (const SupportRow &row : support_matrix()) {
    INFO(support_row_text(row) << " (bagua-info --support prints the table)");
    CHECK(text.str().find(support_row_text(row)) != std::string::npos);
  }
}

TEST_CASE("every family and wire pair appears at most once in the matrix", "[support]") {
  std::set<std::pair<int, int>> seen;
  for (const SupportRow &row : support_matrix())
    CHECK(seen.insert({int(row.family), int(row.wire)}).second);
  CHECK(seen.size() == support_matrix().size());
}

TEST_CASE("tag layout: 15 bits give 1024 slots of 32 steps; wider tags widen steps", "[tags]") {
  TagLayout layout;
  CHECK(TagLayout::make(32766, &layout) == BAGUA_ERR_TRANSPORT);
  REQUIRE(TagLayout::make(32767, &layout) == BAGUA_SUCCESS);
  CHECK(layout.slots() == 1024);
  CHECK(layout.step_bits() == 5);
  // Every tag of every slot and step stays within the limit, and they differ.
  std::set<Tag> tags;
  for (uint64_t slot = 0; slot < layout.slots(); ++slot)
    for (uint32_t step = 0; step < 32; ++step) {
      const Tag t = layout.call(slot).at(step);
      CHECK(t <= 32767);
      tags.insert(t);
    }
  CHECK(tags.size() == 32768);
  // Slots and steps wrap.
  CHECK(layout.call(1024).at(33) == layout.call(0).at(1));
  REQUIRE(TagLayout::make(8388607, &layout) == BAGUA_SUCCESS);  // Open MPI's pml ucx
  CHECK(layout.step_bits() == 12);
  CHECK(layout.slots() == 2048);
  REQUIRE(TagLayout::make(0x7fffffff, &layout) == BAGUA_SUCCESS);  // ob1
  CHECK(layout.slots() == uint32_t(1) << 19);
  REQUIRE(TagLayout::make(0xffffffff, &layout) == BAGUA_SUCCESS);  // UCX: 31 bits used
  CHECK(layout.call(layout.slots() - 1).at(0xfff) == 0x7fffffffu);
}

TEST_CASE("auto message pieces: Open MPI's eager limit less headers, in whole 4 KiB", "[policy]") {
  CHECK(bagua::mpi_transport_piece_bytes_for(65536) == 61440);
  CHECK(bagua::mpi_transport_piece_bytes_for(4 << 20) == (4 << 20) - 4096);
  CHECK(bagua::mpi_transport_piece_bytes_for(4096 + 128) == 4096);
  CHECK(bagua::mpi_transport_piece_bytes_for(4096 + 127) == 0);
  CHECK(bagua::mpi_transport_piece_bytes_for(0) == 0);
}
