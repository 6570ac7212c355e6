// A channel of an SshSession: an exec channel with streamed stdout/stderr and exit status, or a
// direct-streamlocal channel to a unix socket on the worker. Same thread rules as SshSession;
// the session must outlive its channels.
#pragma once

#include <libssh/callbacks.h>
#include <libssh/libssh.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/base/exit_status.h"
#include "launcher/base/stream.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

class SshChannel {
 public:
  using OnData = std::function<void(Stream, std::string_view)>;

  // Opens a session channel and runs `command` on it (the server runs it with the user's
  // shell). Throws Error(kUnreachable) with the session's description. When the server has not
  // answered the channel's opening by `open_deadline` (a kept connection whose server is gone
  // without a word), throws Error(kUnreachable) before anything was asked to run.
  static asio::awaitable<std::unique_ptr<SshChannel>> Exec(
      SshSession& session, const std::string& command,
      std::chrono::steady_clock::time_point open_deadline =
          std::chrono::steady_clock::time_point::max());

  // Opens a direct-streamlocal@openssh.com channel to `socket_path` on the server.
  // Throws Error(kUnreachable) when it cannot: either the server refused the channel (its
  // policy, e.g. AllowStreamLocalForwarding no, or no such socket; the session is then still
  // connected: ssh_is_connected) or the connection broke. The error does not say which.
  static asio::awaitable<std::unique_ptr<SshChannel>> OpenUnixSocket(
      SshSession& session, const std::string& socket_path);

  // Opens a direct-tcpip channel: the server connects to `host`:`port` (resolving the name
  // itself) and the channel carries that connection, as `ssh -W` does. Gives up at `deadline`.
  // Throws Error(kUnreachable) naming the session and the destination; TransportRefused when
  // the server answered that it could not connect to the destination (the channel-open
  // failure's reason code, channel_open_failure.h: e.g. nothing listening there yet).
  static asio::awaitable<std::unique_ptr<SshChannel>> OpenTcp(
      SshSession& session, const std::string& host, unsigned int port,
      std::chrono::steady_clock::time_point deadline);

  ~SshChannel();
  SshChannel(const SshChannel&) = delete;
  SshChannel& operator=(const SshChannel&) = delete;

  // Delivers output to on_data as it arrives until the remote side sends EOF, then waits for
  // the exit status. Throws Error(kUnreachable) if the connection breaks.
  asio::awaitable<ExitStatus> Drain(const OnData& on_data);
  // After EOF: waits for the exit status (or the close). Throws as Drain does.
  asio::awaitable<ExitStatus> WaitExitStatus();
  // Delivers output to on_data as it arrives until `done()` holds (asked after each delivery),
  // the remote side sends EOF or closes the channel, or `deadline` passes; returns whether
  // done() held. The channel stays open. Throws as Drain does.
  asio::awaitable<bool> ReadUntil(const OnData& on_data, const std::function<bool()>& done,
                                  std::chrono::steady_clock::time_point deadline);

  // Writes all of `data` (libssh returns short counts when the window is full).
  asio::awaitable<void> Write(std::string_view data);
  // Sends EOF (closes the remote command's stdin).
  asio::awaitable<void> SendEof();

  ssh_channel raw() const { return channel_.get(); }
  SshSession& session() const { return session_; }

 private:
  SshChannel(SshSession& session, ssh_channel channel);
  struct Deleter {
    void operator()(ssh_channel c) const;
  };

  SshSession& session_;
  std::unique_ptr<ssh_channel_struct, Deleter> channel_;
  ssh_channel_callbacks_struct callbacks_{};
  ExitStatus status_;
};

}  // namespace podrun
