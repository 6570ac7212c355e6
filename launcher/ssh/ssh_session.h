// An SSH connection to one worker, driven non-blocking by libssh on the Asio event loop
// (docs/design.md decision 2). Asio resolves and connects the TCP socket, libssh takes the fd and
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
#include <vector>

#include "launcher/pod/host_list.h"
#include "launcher/ssh/ssh_options.h"
#include "launcher/ssh/ssh_transport.h"

namespace podrun {

namespace asio = boost::asio;

class JumpHosts;

// Disconnects and frees; then closes the session's socket if libssh left it open (libssh
// closes a socket given with SSH_OPTIONS_FD when the connection fails, never on a disconnect).
struct SshSessionDeleter {
  void operator()(ssh_session s) const;
};
using UniqueSshSession = std::unique_ptr<ssh_session_struct, SshSessionDeleter>;

class SshSession {
 public:
  // Resolves (through ssh_config, under podrun's own options: ConfigureSession), connects,
  // checks the host key (host_key_policy.h) and authenticates, all within
  // options.connect_timeout. A connection the server refused, reset or closed before its SSH
  // banner (sshd saturated) is retried with backoff (unless !options.retry_refused). Throws
  // Error(kUnreachable) whose message names the host and the reason.
  // The connection is a TCP socket of its own, or a direct-tcpip channel of a jump host's
  // session taken from `jumps` (shared by every connection through that jump host; without
  // `jumps`, a jump host connection of this session's own), or a ProxyCommand's process
  // (proxy_command.h): see ConfigureSession for which.
  static asio::awaitable<std::unique_ptr<SshSession>> Connect(HostSpec target, SshOptions options,
                                                              JumpHosts* jumps = nullptr);

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
  // The same, but returns false without waiting further once `deadline` has passed.
  asio::awaitable<bool> WaitIoUntil(std::chrono::steady_clock::time_point deadline);

  // Asio waits for readiness edge-triggered (EPOLLET), libssh reads a few KiB per call and
  // writes its output only when it polls: so the socket can hold bytes libssh left over from
  // an earlier arrival, or libssh output the socket would take at once, and a wait begun then
  // sleeps until something else happens on the connection (seen: exec stalled until the next
  // keepalive, 15 s). Every loop calls this before waiting for the socket: it flushes libssh's
  // pending output if the socket takes it and returns true when the caller should look at its
  // channels again instead of waiting (readable, when `want_input`, or output was flushed).
  bool ReadyNow(bool want_input = true);

  // The descriptor to wait on for the socket's readiness (a dup of libssh's fd), for loops
  // that wait on this session and other fds at once (AgentTunnel).
  asio::posix::stream_descriptor& waiter() { return waiter_; }

  // Several channels of one session wait together: libssh reads the socket for whichever
  // channel asks and keeps what belongs to the others in their buffers, so a channel waiting
  // for the socket alone could sleep on data that already came. A loop that waits on its own
  // (AgentTunnel, SshLogStream) registers its timer here before waiting; it is cancelled (once)
  // when another caller's libssh call read from the socket: see NoteIo. WaitIo does this itself.
  void WakeOnIo(const std::shared_ptr<asio::steady_timer>& timer);
  // Call after each libssh call on this session that may have read the socket: if it did,
  // every registered timer is cancelled, so that each waiter looks at its channel again.
  void NoteIo();
  // Bytes libssh has read from the socket so far. A loop that reads several streams or
  // channels compares it before and after its reads: a read of one stream may have brought
  // (and buffered) another's data from the socket, which then will not wake a wait on it.
  uint64_t bytes_in() const { return socket_counter_.in_bytes; }
  // True once keepalives went unanswered (see StartKeepalive): the connection is gone.
  bool lost() const { return dead_; }

  // Calls op() until it returns something other than `again`, waiting for the socket in
  // between; returns that result.
  template <class Op>
  asio::awaitable<int> Retry(Op op, int again = SSH_AGAIN) {
    for (;;) {
      int rc = op();
      NoteIo();
      if (rc != again) co_return rc;
      co_await WaitIo();
    }
  }

  // Sends an SSH keepalive every keepalive_interval until the session is destroyed
  // (libssh has no ServerAliveInterval). When nothing at all has come from the server for
  // kMaxSilentKeepalives intervals, the connection is declared dead: pending and later
  // WaitIo() calls throw Error(kUnreachable).
  void StartKeepalive();

  // The last libssh error of this session.
  std::string LastError() const;

 private:
  SshSession(asio::any_io_executor executor, UniqueSshSession session, std::string description,
             std::string address, std::chrono::milliseconds keepalive_interval);
  static asio::awaitable<std::unique_ptr<SshSession>> ConnectOnce(const HostSpec& target,
                                                                  const SshOptions& options,
                                                                  JumpHosts* jumps);
  // Starts watching libssh's fd (after libssh has one).
  void WatchFd(int fd);
  // Cancels every timer registered with WakeOnIo.
  void WakeAll();
  // The handshake and the authentication (SshAuthenticator); a failure the transport explains
  // is reported as the transport's.
  asio::awaitable<void> Establish(const SshOptions& options);

  // The keepalive's state, shared with its timer's handler: a handler that runs after the
  // session is gone finds `session` null and does nothing.
  struct Keepalive;
  static void ScheduleKeepalive(const std::shared_ptr<Keepalive>& keepalive);

  // Declared first, destroyed last: libssh's handle says goodbye through it.
  std::unique_ptr<SshTransport> transport_;  // null for a TCP connection of its own
  UniqueSshSession session_;
  asio::posix::stream_descriptor waiter_;  // a dup of libssh's fd, for readiness only
  std::string description_;
  std::string address_;
  std::chrono::milliseconds keepalive_interval_;
  std::shared_ptr<Keepalive> keepalive_;
  ssh_counter_struct socket_counter_{};  // bytes through the socket, kept by libssh
  uint64_t noted_in_bytes_ = 0;          // socket_counter_.in_bytes at the last NoteIo
  bool quick_ack_ = true;                // the transport takes TCP_QUICKACK (NoteIo)
  std::vector<std::weak_ptr<asio::steady_timer>> wakers_;  // see WakeOnIo
  bool dead_ = false;                                      // no answer to keepalives: WaitIo throws
};

}  // namespace podrun
