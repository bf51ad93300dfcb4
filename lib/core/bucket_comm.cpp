#include "bucket_comm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "../mc/cuda_stream.hpp"
#include "run.hpp"
#include "support.hpp"

namespace bagua {
namespace {

// The timeline's name of a bucket's collective: "allreduce", or
// "allreduce_" and the wire's name.
std::string collective_name(Wire w) {
  return is_codec(w) ? std::string("allreduce_") + wire_name(w) : "allreduce";
}

// Records the phases an algorithm reports on the bucket's timeline track.
class TimelineSink final : public PhaseSink {
 public:
  TimelineSink(TimelineTrack track, uint64_t round) : track_(track), round_(round) {}
  void phase(const char *name, Clock::time_point begin, Clock::time_point end) override {
    Timeline::get().span(track_, name, round_, begin, end);
  }

 private:
  TimelineTrack track_;
  uint64_t round_;
};

}  // namespace

Status BucketComm::create(MPI_Comm user_comm, const BucketConfig &config,
                          std::unique_ptr<BucketComm> *out) {
  Communicator *user = nullptr;
  BAGUA_TRY(Communicator::get(user_comm, &user));
  std::unique_ptr<Communicator> comm;
  BAGUA_TRY(Communicator::create_private(user_comm,
                                         "bagua_bucket_comm_create (its progress thread)", &comm));
  out->reset(new BucketComm(user_comm, std::move(comm), user->engine(), config));
  return BAGUA_SUCCESS;
}

BucketComm::BucketComm(MPI_Comm user_comm, std::unique_ptr<Communicator> comm,
                       std::shared_ptr<ProgressEngine> engine, const BucketConfig &config)
    : stream_(cuda_stream_of(user_comm)),
      comm_(std::move(comm)),
      config_(config),
      timeline_id_(Timeline::get().next_comm_id()),
      engine_(std::move(engine)) {}

// comm_ is freed after the buckets' tasks ended, with the other members.
BucketComm::~BucketComm() {
  tasks_.wait();  // buckets in flight finish first
  Timeline::get().write(comm_->rank());
  if (device_ == nullptr) return;
  for (Tensor &t : tensors_)
    if (t.ready_event != nullptr) device_->destroy_event(t.ready_event);
}

// One memory type per communicator; device tensors are packed (no flatten)
// into a staged copy for each call.
Status BucketComm::check_memory(size_t count, Memory memory) {
  if (count == 0) return BAGUA_SUCCESS;  // no bytes to place
  if (memory_known_ && memory != memory_)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_bucket_comm_register: the tensor is in %s memory but earlier tensors in %s "
                "memory; a bucketed communicator's tensors share one memory type",
                memory == Memory::cuda ? "CUDA device" : "host",
                memory_ == Memory::cuda ? "CUDA device" : "host");
  if (memory == Memory::cuda && config_.flatten)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_bucket_comm_register: flatten moves tensors into host storage; CUDA device "
                "tensors need flatten 0");
  memory_ = memory;
  memory_known_ = true;
  if (memory != Memory::cuda || device_ != nullptr) return BAGUA_SUCCESS;
  return require_active_device(&device_);
}

Status BucketComm::register_tensor(void *ptr, size_t count, DType t, Memory memory, int *id) {
  if (finalized_)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_bucket_comm_register: registration was already finalized");
  BAGUA_TRY(check_memory(count, memory));
  const auto start = reinterpret_cast<uintptr_t>(ptr);
  const uintptr_t end = start + count * dtype_size(t);
  // The nearest tensor starting at or after `start`, and the one before it.
  if (count > 0) {
    auto next = by_address_.lower_bound(start);
    if (next != by_address_.end() && next->first < end)
      return fail(BAGUA_ERR_INVALID_ARGUMENT,
                  "bagua_bucket_comm_register: the tensor overlaps tensor %d", next->second);
    if (next != by_address_.begin()) {
      const Tensor &before = tensors_[std::prev(next)->second];
      if (reinterpret_cast<uintptr_t>(before.ptr) + before.count * dtype_size(before.dtype) > start)
        return fail(BAGUA_ERR_INVALID_ARGUMENT,
                    "bagua_bucket_comm_register: the tensor overlaps tensor %d",
                    std::prev(next)->second);
    }
  }
  if (tensors_.size() >= static_cast<size_t>(INT32_MAX))
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bagua_bucket_comm_register: too many tensors");
  void *event = nullptr;
  if (memory == Memory::cuda && count > 0) BAGUA_TRY(device_->create_event(&event));
  *id = static_cast<int>(tensors_.size());
  tensors_.push_back(Tensor{ptr, count, t});
  tensors_.back().ready_event = event;
  if (count > 0) by_address_[start] = *id;
  return BAGUA_SUCCESS;
}

// Fills buckets in registration order: a bucket is closed when the next
// tensor has another datatype or would take it past the byte cap (a tensor
// larger than the cap gets a bucket of its own).
std::vector<size_t> BucketComm::bucket_starts(size_t cap) const {
  std::vector<size_t> starts;
  size_t filled = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor &t = tensors_[i];
    const size_t bytes = t.count * dtype_size(t.dtype);
    const bool fits = i > 0 && tensors_[i - 1].dtype == t.dtype && filled + bytes <= cap;
    if (!fits) {
      starts.push_back(i);
      filled = 0;
    }
    filled += bytes;
  }
  return starts;
}

void BucketComm::form_buckets(size_t cap) {
  const std::vector<size_t> starts = bucket_starts(cap);
  size_t next_start = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    Tensor &t = tensors_[i];
    if (next_start < starts.size() && starts[next_start] == i) {
      buckets_.emplace_back();
      buckets_.back().dtype = t.dtype;
      next_start++;
    }
    Bucket &b = buckets_.back();
    t.bucket = static_cast<int>(buckets_.size() - 1);
    t.offset = b.count;
    b.count += t.count;
    b.tensors.push_back(static_cast<int>(i));
  }
  for (Bucket &b : buckets_) b.unready = b.tensors.size();
}

// Host buckets of several tensors get contiguous storage: with flattening
// the tensors move there for good (their contents copied), otherwise it is
// the buffer they are packed into for each call. A single host tensor runs
// where it is; device tensors are packed into a staged copy for each call.
void BucketComm::lay_out_storage(void **addresses) {
  for (Bucket &b : buckets_) {
    if (!config_.flatten && (b.tensors.size() == 1 || memory_ == Memory::cuda)) continue;
    b.storage.resize(b.count * dtype_size(b.dtype));
    if (!config_.flatten) continue;
    for (int id : b.tensors) {
      Tensor &t = tensors_[id];
      void *place = b.storage.data() + t.offset * dtype_size(t.dtype);
      if (t.count > 0) std::memcpy(place, t.ptr, t.count * dtype_size(t.dtype));
      t.ptr = place;
    }
  }
  if (addresses != nullptr)
    for (size_t i = 0; i < tensors_.size(); ++i) addresses[i] = tensors_[i].ptr;
}

// Every rank must form the same buckets: compares a fingerprint of the
// layout (bucket sizes and types), bounded by the timeout.
Status BucketComm::check_layout_agrees() {
  uint64_t hash = 1469598103934665603ull;
  const auto mix = [&](uint64_t v) { hash = (hash ^ v) * 1099511628211ull; };
  for (const Bucket &b : buckets_) {
    mix(b.count);
    mix(static_cast<uint64_t>(b.dtype));
  }
  bool same = false;
  BAGUA_TRY(comm_->agree_equal(static_cast<int64_t>(hash >> 2),
                               "bagua_bucket_comm_finalize_registration: comparing bucket layouts",
                               &same));
  if (!same)
    return fail(BAGUA_ERR_MISMATCH,
                "bagua_bucket_comm_finalize_registration: ranks registered different tensors "
                "(counts, datatypes or order differ), so their buckets differ");
  return BAGUA_SUCCESS;
}

// Checks the choice against the support matrix and selects the schedule for
// the bucket's size.
Status BucketComm::build_algorithm(Bucket &b, BucketAlgorithmChoice choice) {
  BAGUA_TRY(check_support(Family::bucket, choice.wire, b.dtype, choice.op, Memory::host));
  BAGUA_TRY(comm_->policy().select(Family::bucket, choice.wire, b.count * dtype_size(b.dtype),
                                   Memory::host, &b.schedule));
  b.choice = choice;
  return BAGUA_SUCCESS;
}

// The formed buckets are usable: not too many for the tag space, the same on
// every rank, and each supports the default algorithm.
Status BucketComm::check_buckets() {
  constexpr const char *fn = "bagua_bucket_comm_finalize_registration";
  // Buckets run concurrently, each in a tag slot of its own.
  const size_t max_buckets = comm_->tags().slots();
  if (buckets_.size() > max_buckets)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "%s: %zu buckets exceed the limit of %zu (one tag slot each); raise bucket_bytes",
                fn, buckets_.size(), max_buckets);
  BAGUA_TRY(check_layout_agrees());
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Status s = build_algorithm(buckets_[i], config_.algorithm);
    if (s != BAGUA_SUCCESS)
      return fail(s, "%s: default algorithm for bucket %zu: %s", fn, i,
                  std::string(last_error_message()).c_str());
  }
  return BAGUA_SUCCESS;
}

Status BucketComm::finalize_registration(void **addresses, int *num_buckets) {
  if (finalized_)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_bucket_comm_finalize_registration: already finalized");
  if (tensors_.empty())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bagua_bucket_comm_finalize_registration: no tensor was registered");
  form_buckets(config_.bucket_bytes);
  const Status s = check_buckets();
  if (s != BAGUA_SUCCESS) {
    buckets_.clear();  // registration stays open
    return s;
  }
  lay_out_storage(addresses);
  Timeline &timeline = Timeline::get();
  for (size_t i = 0; i < buckets_.size(); ++i)
    timeline.name_track({timeline_id_, static_cast<int>(i)});
  finalized_ = true;
  all_choice_ = config_.algorithm;
  if (config_.auto_bucket_bytes) BAGUA_TRY(start_tuning());
  *num_buckets = static_cast<int>(buckets_.size());
  return BAGUA_SUCCESS;
}

// The candidate caps: the configured one and the defaults, ascending,
// without those that form the same buckets as a smaller one or more buckets
// than there are tag slots.
Status BucketComm::start_tuning() {
  std::vector<size_t> caps = default_bucket_candidates();
  caps.push_back(config_.bucket_bytes);
  std::sort(caps.begin(), caps.end());
  std::vector<size_t> kept;
  std::vector<std::vector<size_t>> layouts;
  for (size_t cap : caps) {
    std::vector<size_t> starts = bucket_starts(cap);
    if (starts.size() > comm_->tags().slots()) continue;
    if (std::find(layouts.begin(), layouts.end(), starts) != layouts.end()) continue;
    layouts.push_back(std::move(starts));
    kept.push_back(cap);
  }
  tuner_ = std::make_unique<BucketSizeTuner>(kept, kTuneWarmupSteps, kTuneTimedSteps);
  step_end_ = TimelineClock::now();
  return tuner_->current() != config_.bucket_bytes ? rebucket(tuner_->current()) : BAGUA_SUCCESS;
}

// The buckets of another cap, between steps (every bucket collecting).
Status BucketComm::rebucket(size_t cap) {
  buckets_.clear();
  form_buckets(cap);
  for (Bucket &b : buckets_) BAGUA_TRY(build_algorithm(b, all_choice_));
  lay_out_storage(nullptr);
  for (size_t i = 0; i < buckets_.size(); ++i)
    Timeline::get().name_track({timeline_id_, static_cast<int>(i)});
  return BAGUA_SUCCESS;
}

// A step ended (wait_all): the tuner gets its time; the decision agrees the
// ranks' mean times (in whole nanoseconds) under MAX.
Status BucketComm::end_step() {
  if (tuner_ == nullptr || !tuner_->tuning()) return BAGUA_SUCCESS;
  const auto now = TimelineClock::now();
  const double seconds = std::chrono::duration<double>(now - step_end_).count();
  step_end_ = now;
  Status agreed = BAGUA_SUCCESS;
  const auto agree = [&](std::vector<double> &means) {
    std::vector<int64_t> mine(means.size()), all(means.size());
    for (size_t i = 0; i < means.size(); ++i) mine[i] = std::llround(means[i] * 1e9);
    agreed = comm_->agree_max(mine, all, "bucket size tuning: agreeing on step times");
    for (size_t i = 0; i < means.size(); ++i) means[i] = double(all[i]) * 1e-9;
  };
  const bool changed = tuner_->on_step(seconds, agree);
  BAGUA_TRY(comm_->record(agreed));
  return changed ? rebucket(tuner_->current()) : BAGUA_SUCCESS;
}

Status BucketComm::check_bucket(int bucket) const {
  if (!finalized_)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "nothing to wait for: register tensors and call "
                "bagua_bucket_comm_finalize_registration first");
  if (bucket < 0 || static_cast<size_t>(bucket) >= buckets_.size())
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "bucket %d does not exist (there are %zu)", bucket,
                buckets_.size());
  return BAGUA_SUCCESS;
}

Status BucketComm::check_tensor(int tensor) const {
  if (tensor < 0 || static_cast<size_t>(tensor) >= tensors_.size())
    return fail(BAGUA_ERR_INVALID_ARGUMENT, "tensor id %d is unknown (%zu registered)", tensor,
                tensors_.size());
  if (!finalized_)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "call bagua_bucket_comm_finalize_registration before marking tensors ready");
  return BAGUA_SUCCESS;
}

Status BucketComm::tensor_bucket(int tensor, int *bucket) {
  BAGUA_TRY(check_tensor(tensor));
  *bucket = tensors_[tensor].bucket;
  return BAGUA_SUCCESS;
}

Status BucketComm::set_algorithm(int bucket, BucketAlgorithmChoice choice) {
  if (bucket != -1) BAGUA_TRY(check_bucket(bucket));
  if (bucket != -1 && tuner_ != nullptr && tuner_->tuning())
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "bucket %d: while the bucket size is being tuned (auto_bucket_bytes) buckets "
                "change between steps; set the algorithm of all buckets (-1)",
                bucket);
  if (!finalized_) BAGUA_TRY(check_bucket(0));
  std::lock_guard lock(mutex_);
  const size_t first = bucket == -1 ? 0 : static_cast<size_t>(bucket);
  const size_t last = bucket == -1 ? buckets_.size() : first + 1;
  // Check every bucket before changing any, so a failure changes nothing.
  for (size_t i = first; i < last; ++i) {
    const Bucket &b = buckets_[i];
    if (b.state != State::collecting || b.unready != b.tensors.size())
      return fail(BAGUA_ERR_INVALID_ARGUMENT,
                  "bucket %zu has tensors marked ready; change its algorithm between rounds", i);
    Bucket probe;
    probe.dtype = b.dtype;
    probe.count = b.count;
    const Status s = build_algorithm(probe, choice);
    if (s != BAGUA_SUCCESS)
      return fail(s, "bucket %zu: %s", i, std::string(last_error_message()).c_str());
  }
  for (size_t i = first; i < last; ++i) BAGUA_TRY(build_algorithm(buckets_[i], choice));
  if (bucket == -1) all_choice_ = choice;
  return BAGUA_SUCCESS;
}

Status BucketComm::mark_ready(int tensor) {
  BAGUA_TRY(check_tensor(tensor));
  std::lock_guard lock(mutex_);
  BAGUA_TRY(comm_->check_usable());
  Tensor &t = tensors_[tensor];
  if (t.ready)
    return fail(BAGUA_ERR_INVALID_ARGUMENT,
                "tensor %d is already marked ready; wait for (or test) its bucket %d before "
                "marking it again",
                tensor, t.bucket);
  // The tensor is ready once the work queued on the caller's stream is.
  if (t.ready_event != nullptr) BAGUA_TRY(device_->record_event(t.ready_event, stream_));
  t.ready = true;
  Bucket &b = buckets_[t.bucket];
  if (--b.unready == 0) submit(t.bucket);
  return BAGUA_SUCCESS;
}

// Called with mutex_ held, when the bucket's last tensor became ready. A
// bucket whose task cannot be had finishes at once with that error.
void BucketComm::submit(int bucket) {
  Bucket &b = buckets_[bucket];
  b.state = State::running;
  b.ready_at = TimelineClock::now();
  Timeline::get().instant({timeline_id_, bucket}, "ready", b.round, b.ready_at);
  ProgressEngine::Task task;
  const Status s = engine_->prepare([this, bucket] { run_bucket(bucket); }, tasks_, &task);
  if (s == BAGUA_SUCCESS)
    engine_->start(std::move(task));
  else
    finish(b, s);
}

// Called with mutex_ held: records the bucket's outcome and wakes its waiters.
void BucketComm::finish(Bucket &b, Status s) {
  b.result = s;
  b.message = s == BAGUA_SUCCESS ? "" : last_error_message();
  comm_->record(s);
  b.state = State::done;
  changed_.notify_all();
}

bool BucketComm::packs(const Bucket &b) const {
  return memory_ == Memory::cuda || (!config_.flatten && !b.storage.empty());
}

// The byte offset of tensor t in its bucket.
size_t BucketComm::offset_bytes(const Tensor &t) const { return t.offset * dtype_size(t.dtype); }

// Copies the tensors to where the bucket's call runs, *data: the single
// host tensor itself, the host storage (flattened: already there), or for
// device tensors a staged copy, each tensor copied once its ready event
// completed.
Status BucketComm::pack(Bucket &b, StagedCopy &staged, void **data) {
  if (memory_ == Memory::cuda) return pack_device(b, staged, data);
  *data = b.storage.empty() ? tensors_[b.tensors.front()].ptr : b.storage.data();
  if (!packs(b)) return BAGUA_SUCCESS;
  for (int id : b.tensors) {
    const Tensor &t = tensors_[id];
    if (t.count > 0)
      std::memcpy(b.storage.data() + offset_bytes(t), t.ptr, t.count * dtype_size(t.dtype));
  }
  return BAGUA_SUCCESS;
}

Status BucketComm::pack_device(Bucket &b, StagedCopy &staged, void **data) {
  StagingPool *pool = nullptr;
  BAGUA_TRY(comm_->staging(&pool));
  BAGUA_TRY(StagedCopy::take(*pool, b.count * dtype_size(b.dtype), &staged));
  for (int id : b.tensors) {
    const Tensor &t = tensors_[id];
    if (t.count == 0) continue;
    BAGUA_TRY(device_->wait_event(t.ready_event));
    BAGUA_TRY(staged.copy_in(offset_bytes(t), t.ptr, t.count * dtype_size(t.dtype)));
  }
  BAGUA_TRY(staged.finish());
  *data = staged.host();
  return BAGUA_SUCCESS;
}

// The result back into the tensors; device copies are complete on return,
// and the staged copy given back.
Status BucketComm::unpack(Bucket &b, StagedCopy &staged) {
  if (!packs(b)) return BAGUA_SUCCESS;
  for (int id : b.tensors) {
    const Tensor &t = tensors_[id];
    const size_t bytes = t.count * dtype_size(t.dtype);
    if (bytes == 0) continue;
    if (staged.held())
      BAGUA_TRY(staged.copy_out(t.ptr, offset_bytes(t), bytes));
    else
      std::memcpy(t.ptr, b.storage.data() + offset_bytes(t), bytes);
  }
  if (!staged.held()) return BAGUA_SUCCESS;
  BAGUA_TRY(staged.finish());
  staged.release();
  return BAGUA_SUCCESS;
}

// Pack, run the bucket's algorithm, unpack; each step on the timeline.
Status BucketComm::execute(Bucket &b, TimelineTrack track) {
  Timeline &timeline = Timeline::get();
  const uint64_t round = b.round;
  auto begin = TimelineClock::now();
  StagedCopy staged;
  void *data = nullptr;
  BAGUA_TRY(pack(b, staged, &data));
  if (packs(b)) timeline.span(track, "pack", round, begin, TimelineClock::now());
  // Each bucket has a tag slot of its own: buckets run concurrently.
  AlgoContext ctx = comm_->call_in_slot(static_cast<uint64_t>(track.bucket), b.scratch);
  const Call call{Family::bucket, b.choice.wire, data,         data,    b.count,
                  b.dtype,        b.choice.op,   Memory::host, nullptr, MPI_COMM_NULL};
  TimelineSink sink(track, round);
  begin = TimelineClock::now();
  const Status s =
      run_flat(ctx, call, *b.schedule, comm_->options(), timeline.enabled() ? &sink : nullptr);
  timeline.span(track, collective_name(b.choice.wire).c_str(), round, begin, TimelineClock::now());
  if (s != BAGUA_SUCCESS) return s;
  begin = TimelineClock::now();
  BAGUA_TRY(unpack(b, staged));
  if (packs(b)) timeline.span(track, "unpack", round, begin, TimelineClock::now());
  return BAGUA_SUCCESS;
}

// A bucket's task: one call of its algorithm.
void BucketComm::run_bucket(int bucket) {
  Bucket &b = buckets_[bucket];
  const TimelineTrack track{timeline_id_, bucket};
  const auto start = TimelineClock::now();
  Status s = BAGUA_ERR_INTERNAL;
  try {
    clear_last_error();
    s = execute(b, track);
  } catch (const std::bad_alloc &) {
    s = fail(BAGUA_ERR_OUT_OF_MEMORY, "allocation failed while running the bucket");
  }
  const auto end = TimelineClock::now();
  Timeline::get().span(track, "queued", b.round, b.ready_at, start);
  Timeline::get().span(track, "bucket", b.round, start, end);
  std::lock_guard lock(mutex_);
  finish(b, s);
}

// Reports a finished bucket's outcome once and readies it for its next round.
Status BucketComm::consume(Bucket &b, int bucket) {
  b.state = State::collecting;
  b.unready = b.tensors.size();
  b.round++;
  for (int id : b.tensors) tensors_[id].ready = false;
  if (b.result == BAGUA_SUCCESS) return BAGUA_SUCCESS;
  return fail(b.result, "bucket %d: %s", bucket, b.message.c_str());
}

// Waits until the bucket finished. A bucket still collecting tensors is
// waited for until `deadline` (a tensor may be marked by another thread).
Status BucketComm::wait_locked(std::unique_lock<std::mutex> &lock, int bucket,
                               TimelineClock::time_point deadline) {
  Bucket &b = buckets_[bucket];
  while (b.state != State::done) {
    if (b.state == State::running) {
      changed_.wait(lock);
      continue;
    }
    // After a failure the bucket's collective may never start on every rank.
    BAGUA_TRY(comm_->check_usable());
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout &&
        b.state == State::collecting) {
      int first = -1;
      for (int id : b.tensors)
        if (!tensors_[id].ready && first < 0) first = id;
      // Peers may be inside this bucket's collective: the communicator breaks.
      return comm_->record(fail(BAGUA_ERR_TIMEOUT,
                                "bucket %d: %zu of its %zu tensors (first: tensor %d) were not "
                                "marked ready within BAGUA_TIMEOUT_MS=%lld",
                                bucket, b.unready, b.tensors.size(), first,
                                static_cast<long long>(comm_->options().timeout_ms)));
    }
  }
  return consume(b, bucket);
}

Status BucketComm::wait(int bucket) {
  BAGUA_TRY(check_bucket(bucket));
  const auto deadline =
      TimelineClock::now() + std::chrono::milliseconds(comm_->options().timeout_ms);
  std::unique_lock lock(mutex_);
  return wait_locked(lock, bucket, deadline);
}

Status BucketComm::test(int bucket, bool *done) {
  BAGUA_TRY(check_bucket(bucket));
  std::lock_guard lock(mutex_);
  Bucket &b = buckets_[bucket];
  *done = b.state == State::done;
  return *done ? consume(b, bucket) : BAGUA_SUCCESS;
}

// Waits for every bucket (even after a failure, so all are ready for the
// next round) and returns the first failure.
Status BucketComm::wait_all() {
  BAGUA_TRY(check_bucket(0));
  const auto deadline =
      TimelineClock::now() + std::chrono::milliseconds(comm_->options().timeout_ms);
  std::unique_lock lock(mutex_);
  Status first = BAGUA_SUCCESS;
  std::string message;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    const Status s = wait_locked(lock, static_cast<int>(i), deadline);
    if (s != BAGUA_SUCCESS && first == BAGUA_SUCCESS) {
      first = s;
      message = last_error_message();
    }
  }
  if (first == BAGUA_SUCCESS) return end_step();
  return fail(first, "%s", message.c_str());
}

}  // namespace bagua
