// An SSH connection to one worker, driven non-blocking by libssh on the Asio event loop
// (DESIGN.md decision 2). Asio resolves and connects the TCP socket, libssh takes the fd and
// runs with ssh_set_blocking(0); every SSH_AGAIN waits on the fd with async_wait.
// Thread: everything runs on the one event-loop thread; a session is never shared.
#pragma once

#include <libssh/libssh.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "launcher/pod/host_list.h"

namespace podrun {

namespace asio = boost::asio;

// Settings shared by every connection of a pod (CONTRACT.md, "Selecting the pod").
struct SshOptions {
  std::optional<std::string> default_user;  // -l: for hosts that don't say
  std::optional<int> default_port;          // -p: for hosts that don't say
  std::optional<std::string> identity;      // -i: else ssh-agent, then default key files
  std::optional<std::string> ssh_config;    // -F: else ~/.ssh/config and /etc/ssh/ssh_config
  std::string known_hosts;                  // file to check and record host keys in
  bool strict_host_keys = false;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  std::chrono::milliseconds keepalive_interval{std::chrono::seconds(15)};
};

struct SshSessionDeleter {
  void operator()(ssh_session s) const;
};
using UniqueSshSession = std::unique_ptr<ssh_session_struct, SshSessionDeleter>;

class SshSession {
 public:
  // Resolves (through ssh_config), connects, checks the host key and authenticates, all within
  // options.connect_timeout. A handshake refused or reset (sshd saturated) is retried with
  // backoff. Throws Error(kUnreachable) whose message names the host and the reason.
  static asio::awaitable<std::unique_ptr<SshSession>> Connect(HostSpec target, SshOptions options);

  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;
  ~SshSession();

  ssh_session raw() const { return session_.get(); }
  // "user@host:port" after ssh_config, for messages.
  const std::string& description() const { return description_; }
  // The address libssh connected to (after ssh_config's HostName).
  const std::string& address() const { return address_; }

  // Waits until the socket is ready for what libssh needs next: writable when libssh has
  // output pending, else readable. Throws asio's system_error if cancelled.
  asio::awaitable<void> WaitIo();

  // The descriptor to wait on for the socket's readiness (a dup of libssh's fd), for loops
  // that wait on this session and other fds at once (AgentTunnel).
  asio::posix::stream_descriptor& waiter() { return waiter_; }

  // Calls op() until it returns something other than `again`, waiting for the socket in
  // between; returns that result.
  template <class Op>
  asio::awaitable<int> Retry(Op op, int again = SSH_AGAIN) {
    for (;;) {
      int rc = op();
      if (rc != again) co_return rc;
      co_await WaitIo();
    }
  }

  // Sends an SSH keepalive every keepalive_interval until the session is destroyed
  // (libssh has no ServerAliveInterval). When nothing at all has come from the server for
  // kMaxSilentKeepalives intervals, the connection is declared dead: pending and later
  // WaitIo() calls throw Error(kUnreachable) and dead() turns true.
  void StartKeepalive();
  bool dead() const { return dead_; }

  // The last libssh error of this session.
  std::string LastError() const;

 private:
  SshSession(asio::any_io_executor executor, UniqueSshSession session, std::string description,
             std::string address, std::chrono::milliseconds keepalive_interval);
  static asio::awaitable<std::unique_ptr<SshSession>> ConnectOnce(const HostSpec& target,
                                                                  const SshOptions& options,
                                                                  asio::steady_timer& deadline);
  // Starts watching libssh's fd (after libssh has one).
  void WatchFd(int fd);
  asio::awaitable<void> Handshake(const SshOptions& options);
  asio::awaitable<void> Authenticate(const SshOptions& options);
  void ScheduleKeepalive();

  UniqueSshSession session_;
  asio::posix::stream_descriptor waiter_;  // a dup of libssh's fd, for readiness only
  std::string description_;
  std::string address_;
  std::chrono::milliseconds keepalive_interval_;
  std::unique_ptr<asio::steady_timer> keepalive_timer_;
  ssh_counter_struct socket_counter_{};  // bytes through the socket, kept by libssh
  uint64_t last_in_bytes_ = 0;
  int silent_intervals_ = 0;
  bool dead_ = false;
};

}  // namespace podrun
