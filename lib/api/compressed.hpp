// The sign codec's error-feedback state behind bagua_sign_state_t.
#pragma once

#include "../core/call.hpp"

struct bagua_sign_state_s {
  bagua::SignFeedback feedback;
};

namespace bagua {

// Checks that `state` was made for the call's comm and count and is free,
// and attaches it, claimed: the call releases it (call->feedback->release())
// when it has run, or when it is not started.
Status attach_sign_state(bagua_sign_state_t state, Call *call);

// Releases a blocking call's state, if it has one, when the call returns.
class FeedbackRelease {
 public:
  explicit FeedbackRelease(const Call &call) : feedback_(call.feedback) {}
  ~FeedbackRelease() {
    if (feedback_ != nullptr) feedback_->release();
  }
  FeedbackRelease(const FeedbackRelease &) = delete;
  FeedbackRelease &operator=(const FeedbackRelease &) = delete;

 private:
  SignFeedback *feedback_;
};

}  // namespace bagua
