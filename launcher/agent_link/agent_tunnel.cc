// The agent tunnel: a channel bridge to a socketpair whose other end becomes a gRPC channel.
#include "launcher/agent_link/agent_tunnel.h"

#include <fmt/format.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/support/channel_arguments.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/base/error.h"

namespace podrun {

namespace {
constexpr auto kKeepaliveTime = std::chrono::seconds(5);
constexpr auto kKeepaliveTimeout = std::chrono::seconds(10);
}  // namespace

AgentTunnel::AgentTunnel(std::shared_ptr<SshSession> session, std::unique_ptr<SshChannel> channel) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(ExitCode::kUnreachable, fmt::format("socketpair: {}", std::strerror(errno)));
  }
  grpc_fd_ = fds[1];
  bridge_ = std::make_unique<ChannelBridge>(std::move(session), std::move(channel), fds[0],
                                            kAgentTunnelChunkBytes);
}

AgentTunnel::~AgentTunnel() {
  bridge_.reset();
  if (grpc_fd_ >= 0) ::close(grpc_fd_);
}

grpc::ChannelArguments AgentChannelArguments() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
              static_cast<int>(std::chrono::milliseconds(kKeepaliveTime).count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              static_cast<int>(std::chrono::milliseconds(kKeepaliveTimeout).count()));
  // Pings only while a call is active. A channel made from an fd is polled only while it has
  // calls: an idle one's keepalive ping is never written, so its watchdog closed the transport
  // 15 s later (seen: every other worker's tunnel lost while one worker took 20 s to bootstrap).
  // Idle connections are watched by SSH's own keepalives (SshSession::StartKeepalive).
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
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
