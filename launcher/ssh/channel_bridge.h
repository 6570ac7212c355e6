// ChannelBridge: copies both ways between an SSH channel and a local socket (one end of a
// socketpair) on the event loop, so that whatever holds the socketpair's other end talks
// through the channel: gRPC to the agent (AgentTunnel, docs/design.md decision 3), or a worker's
// own SSH session through a jump host's direct-tcpip channel (jump_hosts.h). Create, use and
// destroy on the event-loop thread.
#pragma once

#include <cstddef>
#include <memory>

#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

// The most an agent's tunnel holds in each direction (the launcher's own, and the holder's).
inline constexpr size_t kAgentTunnelChunkBytes = size_t{256} * 1024;

class ChannelBridge {
 public:
  // Starts copying between `channel` (of `session`) and `local_fd`, which it takes (a
  // non-blocking socket). Reads at most `chunk_bytes` at a time from either side and holds at
  // most that much in each direction. The session is kept alive while the copying runs.
  // When the local side ends (EOF), EOF is sent on the channel and vice versa; when both have
  // ended or either side breaks, the local fd is closed (its peer sees EOF) and the channel
  // freed (closed on the server).
  ChannelBridge(std::shared_ptr<SshSession> session, std::unique_ptr<SshChannel> channel,
                int local_fd, size_t chunk_bytes);
  // Stops copying and closes both ends.
  ~ChannelBridge();
  ChannelBridge(const ChannelBridge&) = delete;
  ChannelBridge& operator=(const ChannelBridge&) = delete;

  // True once the copying stopped because the channel or the local socket failed (not a
  // clean end of both sides).
  bool broken() const;
  // True once the copying stopped, for either reason (the local fd is closed then).
  bool finished() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace podrun
