// The arithmetic of the lockstep start: each agent's wall-clock offset from the launcher's,
// measured NTP style at Hello, and how far ahead the common start instant must lie so that
// every agent holds its Start before it, whatever the pod's size.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "proto/protocol_version.h"

namespace podrun {

// One Hello round trip: the launcher's clock when it was sent and answered, the agent's clock
// in its answer (ns since the epoch).
struct ClockSample {
  int64_t sent_ns = 0;
  int64_t agent_now_ns = 0;
  int64_t received_ns = 0;
};

struct ClockOffset {
  int64_t offset_ns = 0;  // agent clock minus launcher clock
  int64_t rtt_ns = 0;     // of the sample it came from
};

// The offset from the quickest sample (its error is at most half that round trip's
// asymmetry). `samples` must not be empty.
ClockOffset EstimateClockOffset(const std::vector<ClockSample>& samples);

class AgentClient;
struct AgentHello;

// Greets `client` with `probes` Hellos (which also checks its protocol version) and returns its
// clock offset from the quickest one. Throws what AgentClient::Hello throws.
// `hello`, if given, receives the last Hello's answer.
ClockOffset MeasureClockOffset(AgentClient& client, int probes = 3, AgentHello* hello = nullptr);

// The furthest ahead a start is scheduled: what an agent waits at most (it starts at once when
// told to wait longer), less a margin for the clock offsets' error and the Start's travel.
constexpr std::chrono::nanoseconds kMaxStartLead = kMaxStartDelay - std::chrono::seconds(2);

// How far ahead of now the start is scheduled: twice `reach`, what a light RPC to every worker
// at once measured just before took from the first send to the last answer (Start goes the same
// way, one way only: twice that round trip covers a busier moment), at least `minimum` and at
// most kMaxStartLead. The rule follows the pod as measured, not its size: the time Prepare took
// is no measure of it (Prepare forks each job's supervisor; Start only delivers a message).
std::chrono::nanoseconds StartLead(std::chrono::nanoseconds minimum,
                                   std::chrono::nanoseconds reach);

// What the confirmation window has beyond the slowest delivery measured (StartConfirmWindow).
inline constexpr std::chrono::seconds kStartConfirmSlack{10};

// How long after its release a started worker waits for the gang's confirmation before its
// supervisor stops the job (proto/agent.proto, Confirm). The confirmation leaves once the last
// Start was answered, and the last release comes at most `lead` after the first (a Start that
// arrived late); each answer and the confirmation travel the way a light RPC to every worker at
// once took `reach` to go and come back. So: lead + 2 * reach + `slack`, in whole milliseconds,
// at most kMaxStartConfirmWindow.
std::chrono::milliseconds StartConfirmWindow(std::chrono::nanoseconds lead,
                                             std::chrono::nanoseconds reach,
                                             std::chrono::milliseconds slack);

}  // namespace podrun
