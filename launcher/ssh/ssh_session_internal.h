// What the parts of SshSession's implementation share (ssh_session.cc, ssh_session_auth.cc).
#pragma once

#include <stdexcept>
#include <string>

#include "launcher/base/error.h"

namespace podrun::ssh_session_internal {

// A failure worth retrying: the server refused or reset a connection it may accept later.
struct TransientError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline Error Unreachable(const std::string& message) {
  return Error(ExitCode::kUnreachable, message);
}

}  // namespace podrun::ssh_session_internal
