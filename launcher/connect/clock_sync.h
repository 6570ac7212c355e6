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
  int64_t offset_ns = 0;  // agent clock minus launcher clock, as corrected (see below)
  int64_t rtt_ns = 0;     // the quickest round trip
  // What the samples allow: the agent read its clock between our send and the answer, so its
  // offset lies in [agent_now - received, agent_now - sent] for every sample at once.
  int64_t low_ns = 0, high_ns = 0;
};

// The offset a Hello round trip can prove, and no more: the samples' intervals intersected, and
// in that, the point nearest 0. Clocks kept by NTP (a pod's VMs) agree within far less than a
// round trip over SSH, and a midpoint would then "correct" them by the round trip's asymmetry
// (up to half of it, a different error on each worker: 4-17 ms of start skew among 8 workers
// sharing one clock); a clock that is provably off is corrected to its interval's edge, within
// the quickest round trip of the truth. Samples that contradict each other (a clock stepped
// meanwhile): the quickest one's interval alone. `samples` must not be empty.
ClockOffset EstimateClockOffset(const std::vector<ClockSample>& samples);

class AgentClient;
struct AgentHello;

// Greets `client` with `probes` Hellos (which also checks its protocol version) and returns its
// clock offset from the quickest one. Throws what AgentClient::Hello throws.
// `hello`, if given, receives the last Hello's answer (with the VM's TPU worker number only if
// `tpu_worker_number`: see AgentClient::Hello).
ClockOffset MeasureClockOffset(AgentClient& client, int probes = 3, AgentHello* hello = nullptr,
                               bool tpu_worker_number = true);

// The offsets a start uses, one per agent of `measured` (each one's interval): the value that
// the most intervals hold (of those, the nearest 0), for every agent whose interval holds it, so
// that agents whose clocks agree with each other start at one instant even when this launcher's
// clock is off (a laptop's); an agent whose interval does not hold it (its clock provably
// differs from the others') gets the point of its own interval nearest that value.
std::vector<int64_t> StartOffsets(const std::vector<ClockOffset>& measured);

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
// once took `reach` to go and come back, each answer kQuietAfterStart after its release
// (proto/protocol_version.h). So: lead + 2 * reach + kQuietAfterStart + `slack`, in whole
// milliseconds, at most kMaxStartConfirmWindow.
std::chrono::milliseconds StartConfirmWindow(std::chrono::nanoseconds lead,
                                             std::chrono::nanoseconds reach,
                                             std::chrono::milliseconds slack);

}  // namespace podrun
