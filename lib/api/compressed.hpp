// The sign codec's error-feedback state behind bagua_sign_state_t.
#pragma once

#include "../core/call.hpp"

struct bagua_sign_state_s {
  bagua::SignFeedback feedback;
};

namespace bagua {

// Checks that `state` was made for the call's comm and count, and attaches it.
Status attach_sign_state(bagua_sign_state_t state, Call *call);

}  // namespace bagua
