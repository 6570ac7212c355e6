// AgentConnection: one worker's agent as a command holds it (its link, the current gRPC client,
// the agent's clock offset), and AgentConnections: the links of a pod's workers and everything
// they share (the agent binary, the event loop, the fan-out window, jump hosts, the relay).
// `launch` (the attempt runner) and the commands that work on a recorded job (JobAgents) both
// connect through these, so connecting, greeting and measuring the clock are written once.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_binary.h"
#include "launcher/agent_link/agent_client.h"
#include "launcher/agent_link/agent_link.h"
#include "launcher/agent_link/agent_relay.h"
#include "launcher/connect/clock_sync.h"
#include "launcher/connect/pod.h"
#include "launcher/ssh/event_loop.h"
#include "launcher/ssh/fan_out.h"
#include "launcher/ssh/jump_hosts.h"

namespace podrun {

// The link for worker `index` of `pod`: SSH, or local when pod.local > 0.
std::unique_ptr<AgentLink> MakeAgentLink(const Pod& pod, int index, const AgentLinkContext& ctx);

class AgentConnection {
 public:
  AgentConnection(int index, std::unique_ptr<AgentLink> link);

  // How Connect greets the agent: one Hello, or a few that also measure its clock offset (the
  // quickest counts, NTP style) so that a start can be scheduled at one instant everywhere;
  // kMeasureClockOnly does not ask for the VM's TPU worker number (a discovered pod has it from
  // the API), which spares waiting for the metadata server where none answers.
  enum class Greeting { kHello, kMeasureClock, kMeasureClockOnly };

  // Connects anew (installing and starting the agent if needed), greets it and makes the result
  // the current client. Throws what the link or the Hello throws. One Connect at a time (others
  // wait); any thread but the event loop's.
  std::shared_ptr<AgentClient> Connect(Greeting greeting);

  // The current client: null before the first Connect succeeded. Thread-safe.
  std::shared_ptr<AgentClient> client() const;

  int index() const { return index_; }
  // "w3 (root@10.0.0.5:22)" or "w3 (local)", for messages.
  const std::string& description() const { return description_; }
  AgentLink& link() { return *link_; }
  const AgentLink& link() const { return *link_; }

  // From the last kMeasureClock Connect (read them after it returned, on the same thread or
  // after joining it): the agent's wall clock minus ours, the round trip it came from; and the
  // agent's answer to the greeting of the last Connect of either kind.
  int64_t clock_offset_ns() const { return clock_offset_ns_; }
  // Whether a kMeasureClock Connect has succeeded. Thread-safe.
  bool clock_measured() const { return clock_measured_.load(); }
  int64_t rtt_ns() const { return clock_.rtt_ns; }
  // The last measurement whole: the offset, and the interval the samples allowed.
  const ClockOffset& clock() const { return clock_; }
  const AgentHello& hello() const { return hello_; }

 private:
  const int index_;
  const std::unique_ptr<AgentLink> link_;
  const std::string description_;
  std::mutex connect_mutex_;  // one Connect at a time (a follower and a stopper may both try)
  mutable std::mutex client_mutex_;
  std::shared_ptr<AgentClient> client_;
  int64_t clock_offset_ns_ = 0;
  std::atomic<bool> clock_measured_{false};
  ClockOffset clock_;
  AgentHello hello_;
};

class AgentConnections {
 public:
  // The connections (not yet connected) to workers `indexes` of `pod`, in that order;
  // `local_root` is the --local workers' root. With `relay_agent`, a worker lacking the agent
  // binary may get it from a peer that has it (AgentRelay) rather than over SSH. Throws
  // Error(kUnreachable) when the agent binary cannot be found.
  AgentConnections(const Pod& pod, const std::filesystem::path& local_root,
                   const std::vector<int>& indexes, bool relay_agent);
  // Ends the agent relay, closes the links, then lets go of the jump host sessions on the loop.
  ~AgentConnections();
  AgentConnections(const AgentConnections&) = delete;
  AgentConnections& operator=(const AgentConnections&) = delete;

  // In the order of `indexes`.
  std::vector<std::unique_ptr<AgentConnection>>& all() { return connections_; }
  // Null without relay_agent.
  AgentRelay* relay() { return relay_ ? &*relay_ : nullptr; }
  // The agent relay is needed no more (the connect phase is over): its lenders stop, and no
  // later reconnect lends (AgentRelay::End). Blocking; any thread but the loop's; idempotent.
  void EndAgentRelay();

 private:
  // Declared before the connections: their links use these until they are destroyed.
  AgentBinary binary_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<FanOutWindow> window_;
  std::optional<AgentRelay> relay_;   // on the loop
  std::unique_ptr<JumpHosts> jumps_;  // let go of on the loop, after the links
  std::vector<std::unique_ptr<AgentConnection>> connections_;
};

}  // namespace podrun
