#include "async_average.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "../algo/decentralized.hpp"
#include "../algo/reduce.hpp"
#include "run.hpp"

namespace bagua {
namespace {

// One element of type t holding 1 (true) or 0 (false, all bytes zero).
void set_flag(unsigned char *element, DType t, bool on) {
  elem::visit(t, [&]<class E>(E) { elem::store_at<E>(element, 0, on ? 1 : 0); });
}

}  // namespace

Status AsyncAverager::create(void *buf, size_t count, DType t, Memory memory, int interval_ms,
                             MPI_Comm user_comm, std::unique_ptr<AsyncAverager> *out) {
  Communicator *c = nullptr;
  BAGUA_TRY(Communicator::get(user_comm, &c));
  BAGUA_TRY(c->check_usable());
  std::unique_ptr<Communicator> comm;
  BAGUA_TRY(Communicator::create_private(
      user_comm, "bagua_async_average_create (its averaging thread)", &comm));
  std::unique_ptr<AsyncAverager> averager(
      new AsyncAverager(buf, count, t, interval_ms, std::move(comm), c->engine()));
  if (memory == Memory::cuda) BAGUA_TRY(averager->stage_on_device());
  BAGUA_TRY(averager->start());
  *out = std::move(averager);
  return BAGUA_SUCCESS;
}

AsyncAverager::AsyncAverager(void *buf, size_t count, DType t, int interval_ms,
                             std::unique_ptr<Communicator> comm,
                             std::shared_ptr<ProgressEngine> engine)
    : buf_(buf),
      count_(count),
      dtype_(t),
      interval_ms_(interval_ms),
      comm_(std::move(comm)),
      temp_((count + 1) * dtype_size(t)),
      reduced_((count + 1) * dtype_size(t)),
      engine_(std::move(engine)) {}

// comm_ and the staging are freed after the task ended.
AsyncAverager::~AsyncAverager() {
  abort();
  tasks_.wait();
  staged_.release();
}

// The device buffer's page-locked copy, from comm_'s staging.
Status AsyncAverager::stage_on_device() {
  StagingPool *pool = nullptr;
  BAGUA_TRY(comm_->staging(&pool));
  return StagedCopy::take(*pool, count_ * dtype_size(dtype_), &staged_);
}

Status AsyncAverager::start() {
  ProgressEngine::Task task;
  BAGUA_TRY(engine_->prepare([this] { run(); }, tasks_, &task));
  {
    std::lock_guard guard(control_);
    stop_requested_ = false;
    exited_ = false;
  }
  engine_->start(std::move(task));
  return BAGUA_SUCCESS;
}

bool AsyncAverager::stop_requested() {
  std::lock_guard guard(control_);
  return stop_requested_;
}

void AsyncAverager::wait_interval() {
  const auto until = ProgressEngine::Clock::now() + std::chrono::milliseconds(interval_ms_);
  // A wake (abort's) or a spurious one ends a sleep early: check why.
  while (!stop_requested() && ProgressEngine::Clock::now() < until)
    ProgressEngine::sleep_until(until);
}

// Each round: wait the interval (cut short by a stop request), then one
// allreduce that both averages and agrees on stopping.
void AsyncAverager::run() {
  for (;;) {
    wait_interval();
    bool stop = false;
    // A failed round breaks comm_: the other ranks' next round waits for this
    // rank's in vain, also where only this rank failed (a device copy).
    const Status s = comm_->record_stop(average_once(&stop));
    if (s != BAGUA_SUCCESS || stop) break;
  }
  std::lock_guard guard(control_);
  exited_ = true;
  exited_cv_.notify_all();
}

Status AsyncAverager::average(const void *src, void *dst, size_t count, DType t) {
  const Call call{Family::async, Wire::exact,  src,     dst,          count, t,
                  ReduceOp::avg, Memory::host, nullptr, MPI_COMM_NULL};
  return run_blocking(*comm_, call);
}

// A one-element allreduce among the ranks' callers: no rank returns before
// every rank has called it.
Status AsyncAverager::barrier() {
  float token = 0;
  return average(&token, &token, 1, DType::f32);
}

// The weights where the host can read and write them, called with weights_
// held: buf itself, or a device buffer's page-locked copy, filled from the
// device on its staging stream (complete on return).
Status AsyncAverager::weights_on_host(void **out) {
  if (!staged_.held()) {
    *out = buf_;
    return BAGUA_SUCCESS;
  }
  *out = staged_.host();
  return staged_.fill(buf_, count_ * dtype_size(dtype_));
}

// A device buffer's page-locked copy back into it (complete on return),
// called with weights_ held; host weights were updated in place.
Status AsyncAverager::weights_write_back() {
  if (!staged_.held()) return BAGUA_SUCCESS;
  return stage_out(staged_, buf_, count_ * dtype_size(dtype_));
}

// temp = (w, this rank's stop request as 0 or 1); reduced = average of temp
// over all ranks. The request's average is nonzero (not all zero bytes) iff
// some rank asked to stop: then every rank stops in this round and discards
// its average; a round whose average is not finite is skipped; otherwise
// w += reduced - temp. w is read and updated under
// weights_, through its host copy for a device buffer.
Status AsyncAverager::average_once(bool *stop) {
  const size_t bytes = count_ * dtype_size(dtype_);
  void *weights = nullptr;
  {
    std::lock_guard guard(weights_);
    BAGUA_TRY(weights_on_host(&weights));
    std::memcpy(temp_.data(), weights, bytes);
  }
  {
    std::lock_guard guard(control_);
    set_flag(temp_.data() + bytes, dtype_, stop_requested_);
  }
  BAGUA_TRY(average(temp_.data(), reduced_.data(), count_ + 1, dtype_));
  const auto flag = reduced_.begin() + static_cast<std::ptrdiff_t>(bytes);
  *stop = std::any_of(flag, reduced_.end(), [](unsigned char b) { return b != 0; });
  if (*stop) return BAGUA_SUCCESS;
  // A non-finite value in any rank's weights makes the same elements of
  // every rank's average non-finite: every rank skips the round alike, and
  // no rank's weights change.
  if (!all_finite(reduced_.data(), count_, dtype_)) return BAGUA_SUCCESS;
  std::lock_guard guard(weights_);
  BAGUA_TRY(weights_on_host(&weights));
  apply_average_delta(weights, reduced_.data(), temp_.data(), count_, dtype_);
  BAGUA_TRY(weights_write_back());
  rounds_.fetch_add(1, std::memory_order_relaxed);
  return BAGUA_SUCCESS;
}

Status AsyncAverager::abort() {
  {
    std::unique_lock guard(control_);
    stop_requested_ = true;
    if (!exited_) {
      engine_->wake_sleepers();
      exited_cv_.wait(guard, [&] { return exited_; });
    }
  }
  return comm_->failure().first();
}

Status AsyncAverager::resume() {
  {
    std::lock_guard guard(control_);
    if (!exited_) return BAGUA_SUCCESS;
  }
  BAGUA_TRY(comm_->check_usable());
  // Barrier: no rank's task runs a round before every rank has resumed.
  BAGUA_TRY(barrier());
  return start();
}

}  // namespace bagua
