// The launcher⇄agent protocol version, shared by podrun and podrun-agent.
#pragma once

#include <chrono>
#include <cstdint>

namespace podrun {

// Bump on any incompatible change to proto/agent.proto; both sides refuse a mismatch.
// Equals podrun.agent.v1.PROTOCOL_VERSION_CURRENT (checked where both are visible).
inline constexpr uint32_t kProtocolVersion = 1;

// The furthest ahead of the agent's clock a Start's start_at_ns may lie: an agent told to wait
// longer starts at once (a clock mix-up must not hold a job back), so the launcher never
// schedules a start that far ahead.
inline constexpr std::chrono::seconds kMaxStartDelay{10};
// After the lockstep instant, the agent and the job's supervisor leave the worker's CPUs to the
// job for a while before they do their own part of the start: on a host that runs several
// workers (a test pod, several jobs on one VM) that work would otherwise delay other workers'
// programs as they start (docs/decisions.md, "What the programs see"). The agent records the
// start and answers kQuietAfterStart after the release (so a start's answer comes that much
// later); the supervisor first reads the job's output kOutputQuietAfterStart after it (the
// output waits in the job's pipes).
inline constexpr std::chrono::milliseconds kQuietAfterStart{20};
inline constexpr std::chrono::milliseconds kOutputQuietAfterStart{100};

// The longest a Start's confirm_within_ms may ask (an agent bounds it to this): a job whose start
// is never confirmed is stopped after at most this long, whatever a launcher asked.
inline constexpr std::chrono::milliseconds kMaxStartConfirmWindow{std::chrono::minutes(5)};

// The one line `podrun-agent serve` prints on stdout (Mosh style), parsed by the launcher:
//   PODRUN-AGENT READY <protocol_version> <agent_version> <socket path>
//   PODRUN-AGENT ERROR <reason>
inline constexpr char kReadyPrefix[] = "PODRUN-AGENT READY";
inline constexpr char kErrorPrefix[] = "PODRUN-AGENT ERROR";
// `podrun-agent lend`'s line: "PODRUN-AGENT SERVING <port>".
inline constexpr char kServingPrefix[] = "PODRUN-AGENT SERVING";

}  // namespace podrun
