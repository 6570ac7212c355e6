// The copying loop of an agent tunnel.
#include "launcher/agent/agent_tunnel.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/support/channel_arguments.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>

#include "launcher/error.h"

namespace podrun {

namespace {
constexpr size_t kCopyChunkBytes = size_t{256} * 1024;
constexpr auto kKeepaliveTime = std::chrono::seconds(5);
constexpr auto kKeepaliveTimeout = std::chrono::seconds(10);
}  // namespace

struct AgentTunnel::State {
  std::shared_ptr<SshSession> session;
  std::unique_ptr<SshChannel> channel;
  asio::posix::stream_descriptor local;  // our end of the socketpair
  // Cancelled by any readiness, or by another channel's read on the session, to resume the loop.
  std::shared_ptr<asio::steady_timer> wake;
  bool stopped = false;
  // Whether a wait is pending: 0 ssh read, 1 ssh write, 2 local read, 3 local write.
  bool armed[4] = {false, false, false, false};

  State(std::shared_ptr<SshSession> s, std::unique_ptr<SshChannel> c, int fd)
      : session(std::move(s)),
        channel(std::move(c)),
        local(session->waiter().get_executor(), fd),
        wake(std::make_shared<asio::steady_timer>(session->waiter().get_executor())) {}
};

namespace {

void Arm(const std::shared_ptr<AgentTunnel::State>& s, asio::posix::stream_descriptor& d,
         asio::posix::stream_descriptor::wait_type type, int which) {
  if (s->armed[which]) return;
  s->armed[which] = true;
  d.async_wait(type, [s, which](boost::system::error_code) {
    s->armed[which] = false;
    s->wake->cancel();
  });
}

asio::awaitable<void> Copy(std::shared_ptr<AgentTunnel::State> s) {
  ssh_channel ch = s->channel->raw();
  int fd = s->local.native_handle();
  std::string to_local, to_remote;
  std::string buffer(kCopyChunkBytes, '\0');
  bool remote_eof = false, local_eof = false;
  while (!s->stopped) {
    bool progress = false;
    const uint64_t bytes_in = s->session->bytes_in();
    // Gather what the channel has (libssh takes a few KiB from the socket per call) before
    // writing, so that gRPC's side wakes once per batch rather than once per packet.
    bool broken = false;
    while (to_local.size() < kCopyChunkBytes && !remote_eof) {
      int n = ssh_channel_read_nonblocking(ch, buffer.data(), kCopyChunkBytes, 0);
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
    if (broken) break;
    if (!to_local.empty()) {
      ssize_t n = ::write(fd, to_local.data(), to_local.size());
      if (n > 0) {
        to_local.erase(0, static_cast<size_t>(n));
        progress = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        break;
      }
    }
    if (to_remote.empty() && !local_eof) {
      ssize_t n = ::read(fd, buffer.data(), kCopyChunkBytes);
      if (n > 0) {
        to_remote.assign(buffer.data(), static_cast<size_t>(n));
        progress = true;
      } else if (n == 0) {
        local_eof = true;
        ssh_channel_send_eof(ch);
        s->session->NoteIo();
        progress = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        break;
      }
    }
    if (!to_remote.empty()) {
      int n = ssh_channel_write(ch, to_remote.data(), static_cast<uint32_t>(to_remote.size()));
      s->session->NoteIo();
      if (n == SSH_ERROR) break;
      if (n > 0) {
        to_remote.erase(0, static_cast<size_t>(n));
        progress = true;
      }
    }
    if (remote_eof && local_eof && to_local.empty() && to_remote.empty()) break;
    if (progress) continue;
    if (s->session->bytes_in() != bytes_in ||
        s->session->ReadyNow(to_local.size() < kCopyChunkBytes && !remote_eof)) {
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
  boost::system::error_code ignored;
  s->local.close(ignored);  // gRPC sees EOF: its calls fail and the caller reconnects
  s->session->waiter().cancel(ignored);
}

}  // namespace

AgentTunnel::AgentTunnel(std::shared_ptr<SshSession> session, std::unique_ptr<SshChannel> channel) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(ExitCode::kUnreachable, fmt::format("socketpair: {}", std::strerror(errno)));
  }
  grpc_fd_ = fds[1];
  state_ = std::make_shared<State>(std::move(session), std::move(channel), fds[0]);
  asio::co_spawn(state_->local.get_executor(), Copy(state_), asio::detached);
}

AgentTunnel::~AgentTunnel() {
  state_->stopped = true;
  state_->wake->cancel();
  if (grpc_fd_ >= 0) ::close(grpc_fd_);
}

grpc::ChannelArguments AgentChannelArguments() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
              static_cast<int>(std::chrono::milliseconds(kKeepaliveTime).count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              static_cast<int>(std::chrono::milliseconds(kKeepaliveTimeout).count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 * 1024 * 1024);
  return args;
}

std::shared_ptr<grpc::Channel> AgentTunnel::MakeGrpcChannel() {
  int fd = grpc_fd_;
  grpc_fd_ = -1;  // gRPC owns it now
  return grpc::CreateCustomInsecureChannelFromFd("podrun-agent", fd, AgentChannelArguments());
}

}  // namespace podrun
