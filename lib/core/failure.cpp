#include "failure.hpp"

namespace bagua {

Status FailureState::check() const {
  std::lock_guard lock(mutex_);
  if (first_ == BAGUA_SUCCESS) return BAGUA_SUCCESS;
  return fail(BAGUA_ERR_COMM_BROKEN, "an earlier call failed with '%s' (%s); free this object",
              bagua_error_string(first_), message_.c_str());
}

Status FailureState::record(Status s) { return breaks(s) ? record_stop(s) : s; }

Status FailureState::record_stop(Status s) {
  if (s == BAGUA_SUCCESS) return s;
  std::lock_guard lock(mutex_);
  if (first_ == BAGUA_SUCCESS) {
    first_ = s;
    message_ = last_error_message();
  }
  return s;
}

Status FailureState::first() const {
  std::lock_guard lock(mutex_);
  if (first_ == BAGUA_SUCCESS) return BAGUA_SUCCESS;
  return fail(first_, "%s", message_.c_str());
}

bool FailureState::broken() const {
  std::lock_guard lock(mutex_);
  return first_ != BAGUA_SUCCESS;
}

}  // namespace bagua
