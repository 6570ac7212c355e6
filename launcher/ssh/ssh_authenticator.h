// SshAuthenticator: proves a freshly connected SshSession both ways. The handshake, with
// podrun's own host-key decision against known_hosts (docs/design.md decision 13), then the
// user's public-key authentication. SshSession::Connect owns the connection (TCP, jump host or
// ProxyCommand, retries, deadline) and hands it here once libssh has its fd.
// Thread: the session's event-loop thread, like the session.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "launcher/ssh/ssh_options.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

class SshAuthenticator {
 public:
  // Both must outlive the authenticator.
  SshAuthenticator(SshSession& session, const SshOptions& options)
      : session_(session), options_(options) {}

  // The SSH handshake and the host-key check: a known key is accepted, a new one recorded or
  // refused per StrictHostKeyChecking, a changed one always refused with both fingerprints.
  // Throws ssh_connect_error::TransientError when the server reset or closed the connection before
  // its banner (worth a retry), else Error(kUnreachable) naming the host and what to do.
  asio::awaitable<void> Handshake();
  // Public-key authentication: the identity file when given, else ssh-agent and the default
  // key files. Throws Error(kUnreachable) saying what was tried.
  asio::awaitable<void> Authenticate();

 private:
  SshSession& session_;
  const SshOptions& options_;
};

}  // namespace podrun
