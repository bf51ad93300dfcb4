// The bucketed communicator (doc/buckets.md): tensors registered in the
// order they become ready are grouped into buckets of one datatype up to a
// byte cap; when every tensor of a bucket is marked ready, the bucket's
// algorithm runs as a task of the communicator's progress engine while the
// caller keeps computing. Messages are tagged by bucket and call, so buckets may start in
// a different order on every rank and run concurrently.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../mc/device.hpp"
#include "../mc/staging_pool.hpp"
#include "bucket_tuner.hpp"
#include "call.hpp"
#include "comm.hpp"
#include "progress_engine.hpp"
#include "select.hpp"
#include "timeline.hpp"

namespace bagua {

// What a bucket runs: a wire format (exact allreduce or a codec) and its op.
struct BucketAlgorithmChoice {
  Wire wire = Wire::exact;
  ReduceOp op = ReduceOp::avg;
};

struct BucketConfig {
  size_t bucket_bytes;
  bool flatten;
  BucketAlgorithmChoice algorithm;
  bool auto_bucket_bytes = false;  // tune the cap during the first steps (not with flatten)
};

// Steps per candidate cap while tuning: one warm-up, then the timed ones.
constexpr int kTuneWarmupSteps = 1, kTuneTimedSteps = 2;

class BucketComm {
 public:
  // Collective over user_comm: creates a private communicator state of it.
  static Status create(MPI_Comm user_comm, const BucketConfig &config,
                       std::unique_ptr<BucketComm> *out);
  // Waits for buckets in flight, writes the timeline, frees the private state.
  ~BucketComm();
  BucketComm(const BucketComm &) = delete;
  BucketComm &operator=(const BucketComm &) = delete;

  // `memory`: where ptr lives. A communicator's tensors share one memory
  // type; CUDA device tensors need flatten off (they are packed into a
  // staged copy for each call, after the event mark_ready records).
  Status register_tensor(void *ptr, size_t count, DType t, Memory memory, int *id);
  // Collective: forms the buckets and checks that every rank formed the same.
  Status finalize_registration(void **addresses, int *num_buckets);
  Status tensor_bucket(int tensor, int *bucket);
  Status set_algorithm(int bucket, BucketAlgorithmChoice choice);
  Status mark_ready(int tensor);
  Status wait(int bucket);
  Status test(int bucket, bool *done);
  Status wait_all();

 private:
  enum class State { collecting, running, done };
  struct Tensor {
    void *ptr;  // the user's address, or its place in the flattened bucket
    size_t count;
    DType dtype;
    int bucket = -1;
    size_t offset = 0;  // elements from the start of the bucket
    bool ready = false;
    void *ready_event = nullptr;  // device tensors: recorded by mark_ready
  };
  struct Bucket {
    DType dtype = DType::f32;
    size_t count = 0;
    std::vector<int> tensors;
    Bytes storage;  // host tensors: flattened tensors, or the packing buffer
    Bytes scratch;
    BucketAlgorithmChoice choice;
    const ScheduleInfo *schedule = nullptr;  // set by build_algorithm
    size_t unready = 0;
    State state = State::collecting;
    uint64_t round = 0;
    Status result = BAGUA_SUCCESS;
    std::string message;
    TimelineClock::time_point ready_at;
  };

  BucketComm(MPI_Comm user_comm, std::unique_ptr<Communicator> comm,
             std::shared_ptr<ProgressEngine> engine, const BucketConfig &config);

  Status check_bucket(int bucket) const;
  Status check_tensor(int tensor) const;
  Status check_layout_agrees();
  Status check_buckets();
  // The first tensor of each bucket that a cap of `cap` bytes forms.
  std::vector<size_t> bucket_starts(size_t cap) const;
  void form_buckets(size_t cap);
  Status start_tuning();
  Status end_step();
  Status rebucket(size_t cap);
  void lay_out_storage(void **addresses);
  Status build_algorithm(Bucket &b, BucketAlgorithmChoice choice);
  void submit(int bucket);
  void run_bucket(int bucket);
  void finish(Bucket &b, Status s);
  Status execute(Bucket &b, TimelineTrack track);
  Status check_memory(size_t count, Memory memory);
  // Whether the bucket's tensors are copied in and out for each call.
  bool packs(const Bucket &b) const;
  size_t offset_bytes(const Tensor &t) const;
  Status pack(Bucket &b, StagedCopy &staged, void **data);
  Status pack_device(Bucket &b, StagedCopy &staged, void **data);
  Status unpack(Bucket &b, StagedCopy &staged);
  Status wait_locked(std::unique_lock<std::mutex> &lock, int bucket,
                     TimelineClock::time_point deadline);
  Status consume(Bucket &b, int bucket);

  // The CUDA stream of the user's communicator when this one was created
  // (that communicator may be freed): it orders device tensors' readiness.
  void *stream_;
  std::unique_ptr<Communicator> comm_;  // used by the tasks; outlives them
  const BucketConfig config_;
  Memory memory_ = Memory::host;  // of every tensor with elements
  bool memory_known_ = false;     // a tensor with elements was registered
  Device *device_ = nullptr;      // device tensors: their ready events' device
  const int timeline_id_;
  std::vector<Tensor> tensors_;
  std::map<uintptr_t, int> by_address_;  // start address -> tensor, for overlap checks
  std::vector<Bucket> buckets_;
  bool finalized_ = false;
  BucketAlgorithmChoice all_choice_;        // the algorithm of every bucket, for re-bucketing
  std::unique_ptr<BucketSizeTuner> tuner_;  // with auto_bucket_bytes
  TimelineClock::time_point step_end_;      // when the last step ended

  std::mutex mutex_;  // guards tensors' ready flags and buckets' states
  std::condition_variable changed_;
  std::shared_ptr<ProgressEngine> engine_;  // the user communicator's
  TaskGroup tasks_;                         // the buckets' tasks
};

}  // namespace bagua
