// Per-communicator state: a duplicate of the user's communicator (so our
// messages never match the user's), the transport over it (or, for a
// communicator formed without MPI by bagua_comm_create_oob, no duplicate and
// a transport connected out of band), call sequence numbers for tags,
// scratch memory and options. Created on first use, cached
// on the user's communicator as an MPI attribute; features that run on
// background threads (buckets, asynchronous averaging, nonblocking calls)
// create private states of their own.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "../algo/context.hpp"
#include "exchange.hpp"
#include "failure.hpp"
#include "options.hpp"
#include "select.hpp"
#include "tags.hpp"

namespace bagua {

class DeviceScratch;
class StagingPool;
class Hierarchy;
class ProgressEngine;

// State of one collective family that lives as long as its communicator
// (partial reduce's controller, the nonblocking calls' workers). Destroyed
// before the communicator's transport and duplicate.
class CommExtension {
 public:
  virtual ~CommExtension() = default;
};
enum class ExtensionKey : uint8_t { partial, nonblocking, p2p };
constexpr size_t kExtensionKeys = 3;

class Communicator {
 public:
  // The state of `user_comm`, created (collectively) on first use.
  static Status get(MPI_Comm user_comm, Communicator **out);
  // The state cached on `user_comm`, or nullptr; creates nothing.
  static Communicator *find(MPI_Comm user_comm);

  // bagua_comm_create_oob: a state of the group that `exchange` spans, over
  // the ucx transport whatever BAGUA_TRANSPORT says, cached on *handle, a
  // duplicate of MPI_COMM_SELF made for it. Collective over the group.
  static Status create_oob(Exchange &exchange, MPI_Comm *handle);
  // bagua_comm_free: frees a handle create_oob made (its state with it).
  static Status free_oob(MPI_Comm *handle);

  // A state of `user_comm` (a valid intra-communicator) owned by the caller
  // and not cached on it; created collectively. Its transport may be used
  // from several threads at once, so with the mpi transport MPI must provide
  // MPI_THREAD_MULTIPLE (`feature` names the caller in the error message).
  // On a communicator formed without MPI, its worker addresses are exchanged
  // over the transport of user_comm's state, in that state's next call slot.
  static Status create_private(MPI_Comm user_comm, const char *feature,
                               std::unique_ptr<Communicator> *out);

  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  const Options &options() const { return options_; }
  // The selection policy of options(), built with the communicator.
  const SelectionPolicy &policy() const { return policy_; }
  Transport &transport() { return *transport_; }
  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }
  // MPI_COMM_NULL on a communicator formed without MPI.
  MPI_Comm dup_comm() const { return dup_; }
  // Whether the ranks are an MPI communicator's (false: formed without MPI).
  bool has_mpi_group() const { return dup_ != MPI_COMM_NULL; }
  // Fails, naming `feature`, on a communicator formed without MPI: for the
  // features that need MPI collectives over the ranks.
  Status require_mpi_group(const char *feature) const;
  const TagLayout &tags() const { return tags_; }

  // Collective, on a communicator formed without MPI: a new ucx transport
  // among its ranks (shared by threads), connected over this communicator's
  // transport in the next call slot.
  Status connect_transport(std::unique_ptr<Transport> *out);

  // Collective agreements outside the algorithms (bucket layouts and sizes),
  // bounded by BAGUA_TIMEOUT_MS: out[i] = max over ranks of in[i]; *same:
  // whether every rank holds `value`. Over MPI on the duplicate, or on a
  // communicator formed without MPI over the transport in the next call slot
  // (no call of this communicator may then be in flight on this rank).
  Status agree_max(std::span<const int64_t> in, std::span<int64_t> out, const char *what);
  Status agree_equal(int64_t value, const char *what, bool *same);

  // Fails when an earlier call broke this communicator.
  Status check_usable() const { return failure_.check(); }

  // A fresh context for the next blocking call (the next tag slot, never
  // the point-to-point one); every rank calls in the same order so the tags
  // agree.
  AlgoContext next_call();
  // A context for a point-to-point message (bagua_send, bagua_recv): the
  // layout's point-to-point slot, which no collective uses.
  AlgoContext point_to_point();
  // A context for a call in tag slot `slot` (concurrent or controller-
  // numbered calls: nonblocking, buckets, partial-reduce groups), with its
  // own scratch.
  AlgoContext call_in_slot(uint64_t slot, Bytes &scratch);

  // Records the outcome of a call: after a failure that breaks the
  // communicator (record), or any failure of a background thread's step
  // (record_stop: its peers wait for it in vain), later calls are refused.
  Status record(Status s) { return failure_.record(s); }
  Status record_stop(Status s) { return failure_.record_stop(s); }
  const FailureState &failure() const { return failure_; }

  // Claims the communicator for one call of the calling thread (false: another
  // thread is in a call on it); released by release().
  bool try_acquire() { return !in_use_.exchange(true); }
  void release() { in_use_.store(false); }

  // The device and page-locked scratch of this communicator's device-buffer
  // calls, created on the first one (on the active device); fails when no
  // device is active.
  Status device_scratch(DeviceScratch **out);
  // The page-locked staging of this communicator's device buffers for the
  // schedules that run on host memory (lib/mc/staging_pool.hpp), created on
  // first use (on the active device). Thread-safe.
  Status staging(StagingPool **out);

  // Node and node-leader sub-communicators of hierarchical mode, created
  // (collectively) on the first call that needs them.
  Status hierarchy(Hierarchy **out);

  // The progress engine of this communicator's background work, shared by
  // its features (nonblocking calls, buckets, asynchronous averaging,
  // partial reduce's controller), each of which waits for its own tasks;
  // started on first use. A feature holds it, so it lasts while one does.
  std::shared_ptr<ProgressEngine> engine();

  // The extension of family `key`, created by `make(Communicator&,
  // std::unique_ptr<T>*)` on first use.
  template <class T, class Make>
  Status extension(ExtensionKey key, Make make, T **out) {
    std::unique_ptr<CommExtension> &slot = extensions_[static_cast<size_t>(key)];
    if (!slot) {
      std::unique_ptr<T> created;
      BAGUA_TRY(make(*this, &created));
      slot = std::move(created);
    }
    *out = static_cast<T *>(slot.get());
    return BAGUA_SUCCESS;
  }

 private:
  Communicator(MPI_Comm dup, Options options, std::unique_ptr<Transport> transport, TagLayout tags);

  // The steps get() and create_private() share: refuses a communicator whose
  // setup timed out before, agrees on the options, then create(); a timeout
  // marks user_comm (`feature`: the caller, for thread-level errors).
  static Status create_checked(MPI_Comm user_comm, bool shared_by_threads,
                               std::unique_ptr<Communicator> *out, const char *feature = nullptr);
  // Duplicates user_comm and creates the transport over the duplicate.
  static Status create(MPI_Comm user_comm, const Options &options, bool shared_by_threads,
                       std::unique_ptr<Communicator> *out);
  // A state without an MPI duplicate, over a ucx transport connected through
  // `exchange`.
  static Status create_without_mpi(Exchange &exchange, const Options &options,
                                   bool shared_by_threads, std::unique_ptr<Communicator> *out);
  // A private state of this communicator formed without MPI (create_private).
  Status create_private_over_transport(std::unique_ptr<Communicator> *out);
  // The setup collective over this communicator's transport, in the next
  // call slot.
  TransportExchange exchange_in_next_slot();
  // Caches `c` on `user_comm` (registry and attribute).
  static Communicator *attach(MPI_Comm user_comm, std::unique_ptr<Communicator> c);

  MPI_Comm dup_;
  Options options_;
  SelectionPolicy policy_;
  std::unique_ptr<Transport> transport_;
  TagLayout tags_;
  uint64_t next_slot_ = 0;
  Bytes scratch_;
  FailureState failure_;
  std::atomic<bool> in_use_{false};
  std::unique_ptr<DeviceScratch> device_scratch_;
  std::mutex staging_mutex_;  // guards staging_
  std::unique_ptr<StagingPool> staging_;
  std::unique_ptr<Hierarchy> hierarchy_;
  std::mutex engine_mutex_;  // guards engine_
  std::shared_ptr<ProgressEngine> engine_;
  std::array<std::unique_ptr<CommExtension>, kExtensionKeys> extensions_;
};

// A transport over `dup` (a communicator the caller owns), of the kind and
// settings `options` name (agreed: load_agreed_options); one shared by
// threads serialises its calls.
Status create_transport(const Options &options, MPI_Comm dup, bool shared_by_threads,
                        std::unique_ptr<Transport> *out);

// One call's exclusive use of a communicator: calls on one communicator must
// come from one thread at a time, and a second thread is told so instead of
// corrupting the first call.
class ExclusiveUse {
 public:
  explicit ExclusiveUse(Communicator &c) : c_(c), held_(c.try_acquire()) {}
  ~ExclusiveUse() {
    if (held_) c_.release();
  }
  ExclusiveUse(const ExclusiveUse &) = delete;
  ExclusiveUse &operator=(const ExclusiveUse &) = delete;
  Status status() const;

 private:
  Communicator &c_;
  bool held_;
};

// MPI must be initialised and not finalised.
Status check_mpi_initialized();

// Features that call MPI from a background thread need MPI_THREAD_MULTIPLE;
// `feature` names the caller in the error message.
Status require_thread_multiple(const char *feature);

}  // namespace bagua
