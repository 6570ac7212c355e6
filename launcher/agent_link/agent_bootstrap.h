// Bootstrapping the agent on a worker over SSH (Mosh style): start the installed agent, which
// announces itself with one strict line; install it first (content-addressed, atomically) when
// the worker lacks this exact binary.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/agent_link/agent_announcement.h"
#include "launcher/agent_link/agent_binary.h"
#include "launcher/agent_link/agent_relay.h"
#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

// What a remote command printed, and how it ended.
struct RemoteResult {
  ExitStatus status;
  std::string out;
  std::string err;
};

// Runs `command` over `session`, feeding `input` to its stdin (then EOF), collecting output.
asio::awaitable<RemoteResult> RunRemote(SshSession& session, const std::string& command,
                                        std::string_view input = {});

// The installed agent's path on the worker, in shell syntax ("$HOME/.podrun/bin/<name>").
std::string RemoteAgentPath(const AgentBinary& agent);

// The command that starts the installed agent (or finds it running) and prints its
// announcement, or kAgentMissing when the worker lacks this binary.
std::string StartAgentCommand(const AgentBinary& agent);

// The command that relays the agent's gRPC through its stdio (`podrun-agent dial-stdio`), for a
// server that refuses stream-local forwarding.
std::string DialStdioCommand(const AgentBinary& agent);

// Throws Error(kUnreachable) when the announced agent speaks another protocol than this podrun.
void CheckAgentProtocol(const AgentAnnouncement& announcement);

// How the agent got onto the worker during EnsureAgent.
enum class AgentInstall { kAlreadyThere, kUploaded, kFromPeer };

// Starts the agent on the worker, installing it first if missing: from a peer when `relay` has
// one (agent_relay.h), else uploaded through this session; a worker that got it lends it on at
// `lend_address` when others wait, over a channel of `session` that the relay holds until its
// End. Throws Error(kUnreachable) naming the step and what the worker said.
asio::awaitable<AgentAnnouncement> EnsureAgent(const std::shared_ptr<SshSession>& session,
                                               const AgentBinary& agent, AgentRelay* relay,
                                               const std::string& lend_address, AgentInstall* how);

}  // namespace podrun
