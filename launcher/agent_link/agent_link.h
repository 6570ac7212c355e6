// AgentLink: how the launcher reaches one worker's agent (docs/design.md decision 9): over SSH,
// through a tunnel, or on this machine for --local. Everything above it (launch, logs,
// status, stop) is the same for both.
#pragma once

#include <grpcpp/channel.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "launcher/agent_link/agent_binary.h"
#include "launcher/agent_link/agent_client.h"
#include "launcher/agent_link/agent_relay.h"
#include "launcher/pod/pod_worker.h"
#include "launcher/ssh/event_loop.h"
#include "launcher/ssh/fan_out.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

class AgentLink {
 public:
  virtual ~AgentLink() = default;

  // Makes sure the agent runs on the worker (installing it if missing) and returns a new gRPC
  // channel to it. Blocking; call from any thread but the event loop's; may be called again
  // after a channel broke (it reconnects). Throws Error(kUnreachable) naming the worker.
  virtual std::shared_ptr<grpc::Channel> Connect() = 0;

  // The address the other workers reach this worker at (for PODRUN_WORKER_HOSTS); known after
  // the first Connect().
  virtual std::string peer_address() const = 0;

  // "w3 (root@10.0.0.5:22)", for messages.
  virtual std::string description() const = 0;

  // Streams a job attempt's log over a channel of its own (the SSH link: ssh_log_stream.h),
  // with the contract of AgentLogReader::StartStreamLogs; null when the link has none (local
  // agents are reached without a tunnel: their StreamLogs is as fast). Call after Connect().
  virtual std::shared_ptr<AgentLogStream> StartLogStream(const std::string& job_id,
                                                         uint32_t attempt, uint64_t from_seq,
                                                         bool follow,
                                                         AgentLogReader::OnBatch on_batch,
                                                         AgentLogReader::OnStreamDone on_done) {
    (void)job_id, (void)attempt, (void)from_seq, (void)follow, (void)on_batch, (void)on_done;
    return nullptr;
  }

  // True if the last Connect() had to upload the agent binary.
  virtual bool uploaded_agent() const { return false; }
  // True if the last Connect() got the agent binary from a peer worker (AgentRelay).
  virtual bool relayed_agent() const { return false; }
  // True if the server refused stream-local forwarding and the tunnel runs through
  // `podrun-agent dial-stdio` instead.
  virtual bool uses_dial_stdio() const { return false; }
  // True if the last Connect() went through the connection holder's kept session.
  virtual bool held() const { return false; }
};

// What every link of a pod shares. The loop, window and jump hosts must outlive the links.
struct AgentLinkContext {
  EventLoop* loop = nullptr;
  FanOutWindow* window = nullptr;  // lives on the loop
  JumpHosts* jumps = nullptr;      // lives on the loop; null: each link its own jump connection
  const AgentBinary* agent = nullptr;
  AgentRelay* relay = nullptr;       // lives on the loop; null: every worker lacking it uploads
  std::filesystem::path local_root;  // --local: worker K's home is local_root/wK
  // Warm connections (docs/decisions.md, "Warm connections"): the connection holder's socket.
  // A worker whose agent runs is then reached through a kept session (one round trip to start
  // the agent's announcement, one for the tunnel); one without it, or when the holder cannot
  // serve, over a connection of the link's own. Empty: always the link's own.
  std::filesystem::path holder;
};

// The link to `worker`'s agent over SSH with `ssh`'s settings.
std::unique_ptr<AgentLink> MakeSshAgentLink(const PodWorker& worker, const SshOptions& ssh,
                                            const AgentLinkContext& ctx);

// The link to local worker `index`'s agent (--local: no SSH).
std::unique_ptr<AgentLink> MakeLocalAgentLink(int index, const AgentLinkContext& ctx);

// The home directory of local worker `index` ($PODRUN_HOME/local/wK).
std::filesystem::path LocalWorkerHome(const std::filesystem::path& local_root, int index);

}  // namespace podrun
