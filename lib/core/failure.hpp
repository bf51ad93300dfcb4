// The one failure state of every object that runs collectives (a
// communicator's state, its nonblocking calls, a bucketed communicator, an
// asynchronous averager): after a failure that leaves messages in flight,
// every later call is refused with BAGUA_ERR_COMM_BROKEN, naming the first
// failure and its message. Thread-safe.
#pragma once

#include <mutex>
#include <string>

#include "../base/status.hpp"

namespace bagua {

class FailureState {
 public:
  // Whether a call that failed with `s` left messages in flight (timeout,
  // transport failure, mismatch, corrupt data).
  static bool breaks(Status s) {
    return s == BAGUA_ERR_TIMEOUT || s == BAGUA_ERR_TRANSPORT || s == BAGUA_ERR_MISMATCH ||
           s == BAGUA_ERR_CORRUPT_DATA;
  }

  // BAGUA_ERR_COMM_BROKEN once broken, else success.
  Status check() const;
  // Records the outcome of a call (the thread's last error is its message)
  // and returns it.
  Status record(Status s);
  // Records any failure `s` as breaking: a background thread's step that
  // failed on this rank alone (a device copy), whose peers will wait for it
  // in vain. Returns s.
  Status record_stop(Status s);
  bool broken() const;
  // The first failure itself (its status and message), or success.
  Status first() const;

 private:
  mutable std::mutex mutex_;
  Status first_ = BAGUA_SUCCESS;
  std::string message_;
};

}  // namespace bagua
