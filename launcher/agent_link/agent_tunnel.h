// AgentTunnel: joins an SSH channel that reaches the worker's agent (direct-streamlocal, or an
// exec channel running `podrun-agent dial-stdio`) to a local socketpair whose other end becomes
// a gRPC channel (docs/design.md decision 3). A ChannelBridge on the event loop copies both ways.
// Create, use and destroy on the event-loop thread; the gRPC channel may be used anywhere.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>

#include "launcher/ssh/channel_bridge.h"
#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

class AgentTunnel {
 public:
  // Starts copying between `channel` and a new socketpair. The session is kept alive as long
  // as the copying runs.
  AgentTunnel(std::shared_ptr<SshSession> session, std::unique_ptr<SshChannel> channel);
  // Stops copying and closes both ends.
  ~AgentTunnel();
  AgentTunnel(const AgentTunnel&) = delete;
  AgentTunnel& operator=(const AgentTunnel&) = delete;

  // A new gRPC channel over the tunnel (call once: a channel made from an fd never reconnects).
  std::shared_ptr<grpc::Channel> MakeGrpcChannel();

 private:
  std::unique_ptr<ChannelBridge> bridge_;
  int grpc_fd_ = -1;
};

// Channel arguments for every channel to an agent: keepalive pings through the tunnel so a
// broken connection is noticed within seconds, and large messages for log batches.
grpc::ChannelArguments AgentChannelArguments();

}  // namespace podrun
