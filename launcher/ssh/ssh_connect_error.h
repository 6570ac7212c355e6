// The errors of connecting an SshSession (ssh_session.h) and of its handshake and login
// (ssh_authenticator.h): a failure worth retrying, and an unreachable worker.
#pragma once

#include <stdexcept>
#include <string>

#include "launcher/base/error.h"

namespace podrun::ssh_connect_error {

// A failure worth retrying: the server refused or reset a connection it may accept later.
struct TransientError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline Error Unreachable(const std::string& message) {
  return Error(ExitCode::kUnreachable, message);
}

}  // namespace podrun::ssh_connect_error
