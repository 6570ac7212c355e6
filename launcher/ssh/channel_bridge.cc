// The copying loop of a channel bridge.
#include "launcher/ssh/channel_bridge.h"

#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <string>

namespace podrun {

struct ChannelBridge::State {
  std::shared_ptr<SshSession> session;
  std::unique_ptr<SshChannel> channel;   // freed (closed) when the copying ends
  asio::posix::stream_descriptor local;  // our end of the socketpair
  size_t chunk_bytes;
  // Cancelled by any readiness, or by another channel's read on the session, to resume the loop.
  std::shared_ptr<asio::steady_timer> wake;
  bool stopped = false;
  bool broken = false;
  bool finished = false;
  // Whether a wait is pending: 0 ssh read, 1 ssh write, 2 local read, 3 local write.
  bool armed[4] = {false, false, false, false};

  State(std::shared_ptr<SshSession> s, std::unique_ptr<SshChannel> c, int fd, size_t chunk)
      : session(std::move(s)),
        channel(std::move(c)),
        local(session->waiter().get_executor(), fd),
        chunk_bytes(chunk),
        wake(std::make_shared<asio::steady_timer>(session->waiter().get_executor())) {}
};

namespace {

// The handler holds the state weakly: a wait on the session's socket may stay pending long
// after this bridge ended (the session is shared with other channels, or a jump host with
// other workers), and must not keep the bridge, its channel and its session alive meanwhile.
void Arm(const std::shared_ptr<ChannelBridge::State>& s, asio::posix::stream_descriptor& d,
         asio::posix::stream_descriptor::wait_type type, int which) {
  if (s->armed[which]) return;
  s->armed[which] = true;
  std::weak_ptr<ChannelBridge::State> weak = s;
  d.async_wait(type, [weak, which](boost::system::error_code) {
    auto s = weak.lock();
    if (!s) return;
    s->armed[which] = false;
    s->wake->cancel();
  });
}

asio::awaitable<void> Copy(std::shared_ptr<ChannelBridge::State> s) {
  ssh_channel ch = s->channel->raw();
  int fd = s->local.native_handle();
  const size_t chunk = s->chunk_bytes;
  std::string to_local, to_remote;
  std::string buffer(chunk, '\0');
  bool remote_eof = false, local_eof = false;
  while (!s->stopped) {
    bool progress = false;
    const uint64_t bytes_in = s->session->bytes_in();
    // Gather what the channel has (libssh takes a few KiB from the socket per call) before
    // writing, so that the local side wakes once per batch rather than once per packet.
    bool broken = false;
    while (to_local.size() < chunk && !remote_eof) {
      int n = ssh_channel_read_nonblocking(ch, buffer.data(), static_cast<uint32_t>(chunk), 0);
      s->session->NoteIo();
      if (n == SSH_ERROR) {
        broken = true;
        break;
      }
      if (n > 0) {
        to_local.append(buffer.data(), static_cast<size_t>(n));
        progress = true;
      } else if (ssh_channel_is_eof(ch) || ssh_channel_is_closed(ch)) {
        if (!to_local.empty()) break;  // deliver what came before the EOF first
        remote_eof = true;
        ::shutdown(fd, SHUT_WR);
        progress = true;
      } else {
        break;
      }
    }
    if (broken) {
      s->broken = true;
      break;
    }
    if (!to_local.empty()) {
      // MSG_NOSIGNAL: a peer that closed its end is an error here, not a SIGPIPE.
      ssize_t n = ::send(fd, to_local.data(), to_local.size(), MSG_NOSIGNAL);
      if (n > 0) {
        to_local.erase(0, static_cast<size_t>(n));
        progress = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        s->broken = true;
        break;
      }
    }
    if (to_remote.empty() && !local_eof) {
      ssize_t n = ::read(fd, buffer.data(), chunk);
      if (n > 0) {
        to_remote.assign(buffer.data(), static_cast<size_t>(n));
        progress = true;
      } else if (n == 0) {
        local_eof = true;
        ssh_channel_send_eof(ch);
        s->session->NoteIo();
        progress = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        s->broken = true;
        break;
      }
    }
    if (!to_remote.empty()) {
      int n = ssh_channel_write(ch, to_remote.data(), static_cast<uint32_t>(to_remote.size()));
      s->session->NoteIo();
      if (n == SSH_ERROR) {
        s->broken = true;
        break;
      }
      if (n > 0) {
        to_remote.erase(0, static_cast<size_t>(n));
        progress = true;
      }
    }
    if (remote_eof && local_eof && to_local.empty() && to_remote.empty()) break;
    if (progress) continue;
    if (s->session->bytes_in() != bytes_in ||
        s->session->ReadyNow(to_local.size() < chunk && !remote_eof)) {
      // What no edge of the socket would announce (SshSession::ReadyNow): on, after the others.
      co_await asio::post(s->local.get_executor(), asio::use_awaitable);
      continue;
    }
    auto& ssh = s->session->waiter();
    Arm(s, ssh, asio::posix::stream_descriptor::wait_read, 0);
    if (ssh_get_poll_flags(s->session->raw()) & SSH_WRITE_PENDING) {
      Arm(s, ssh, asio::posix::stream_descriptor::wait_write, 1);
    }
    if (to_remote.empty() && !local_eof) {
      Arm(s, s->local, asio::posix::stream_descriptor::wait_read, 2);
    }
    if (!to_local.empty()) Arm(s, s->local, asio::posix::stream_descriptor::wait_write, 3);
    s->session->WakeOnIo(s->wake);
    s->wake->expires_at(asio::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await s->wake->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  s->finished = true;
  boost::system::error_code ignored;
  s->local.close(ignored);  // the local side sees EOF
  s->channel.reset();       // closed on the server: its other end (a socket, an agent) sees EOF
  // A broken connection wakes every other waiter on it at once, to see the error. A live one
  // is left alone: it may carry other channels (a jump host carries every worker's).
  if (!ssh_is_connected(s->session->raw())) s->session->waiter().cancel(ignored);
}

}  // namespace

ChannelBridge::ChannelBridge(std::shared_ptr<SshSession> session,
                             std::unique_ptr<SshChannel> channel, int local_fd, size_t chunk_bytes)
    : state_(
          std::make_shared<State>(std::move(session), std::move(channel), local_fd, chunk_bytes)) {
  asio::co_spawn(state_->local.get_executor(), Copy(state_), asio::detached);
}

ChannelBridge::~ChannelBridge() {
  state_->stopped = true;
  state_->wake->cancel();
}

bool ChannelBridge::broken() const { return state_->broken; }

bool ChannelBridge::finished() const { return state_->finished; }

}  // namespace podrun
