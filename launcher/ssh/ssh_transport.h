// SshTransport: what carries an SSH session's bytes when they do not go over a TCP connection
// of the session's own: a direct-tcpip channel through a jump host (jump_hosts.h) or a
// ProxyCommand's process (proxy_command.h). libssh reads and writes a local socket whose other
// end the transport serves. The session owns its transport and destroys it after libssh's
// handle. Event-loop thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>

#include "launcher/base/error.h"

namespace podrun {

namespace asio = boost::asio;

class SshTransport {
 public:
  virtual ~SshTransport() = default;

  // Asked once the session saw its connection fail: why, when the transport itself failed
  // ("ProxyCommand 'x' exited with status 127", "jump host j: connection lost"); nullopt when
  // it is fine and the far side ended the connection. May wait briefly (a process's exit).
  virtual asio::awaitable<std::optional<std::string>> Failure() = 0;
};

// Thrown while starting a transport when the server refused the connection this time (its
// sshd not listening yet): retried as a refused TCP connection is.
struct TransportRefused : Error {
  explicit TransportRefused(const std::string& message) : Error(ExitCode::kUnreachable, message) {}
};

// A transport that has started, and the local socket libssh is to use (SSH_OPTIONS_FD): the
// caller owns `fd` until it hands it over.
struct StartedTransport {
  std::unique_ptr<SshTransport> transport;
  int fd = -1;
};

}  // namespace podrun
