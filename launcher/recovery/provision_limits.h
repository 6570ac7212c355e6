// How long the provisioning engine (provisioner.h) waits between and for things: the capacity
// backoff, the creating deadline, the poll; each with an environment override for tests.
#pragma once

#include <chrono>

namespace podrun {

// The first wait after every zone refused a create for capacity:
// $PODRUN_TPU_CAPACITY_BACKOFF_SECONDS (tests), else 30 s. Each next wait doubles, up to
// kMaxCapacityBackoff.
std::chrono::seconds CapacityBackoff();
inline constexpr std::chrono::seconds kMaxCapacityBackoff = std::chrono::minutes(10);
// How long a slice podrun created may stay CREATING (a queued resource PROVISIONING) before it
// is deleted and created again: $PODRUN_TPU_CREATING_DEADLINE_SECONDS (tests), else 30 min.
std::chrono::seconds CreatingDeadline();
// How many times a slice stuck in CREATING is deleted and created again before podrun gives up.
inline constexpr int kStuckCreateRetries = 2;
// `gcloud ... describe` every `fallback`, or every $PODRUN_TPU_POLL_SECONDS (tests).
std::chrono::seconds ProvisionPollInterval(std::chrono::seconds fallback);
// The pause before the next poll, `spent` after the last one began: polls begin `poll` apart,
// gcloud's start-up (a second or more) counted in; at least a quarter of `poll` between two.
std::chrono::milliseconds UntilNextPoll(std::chrono::seconds poll,
                                        std::chrono::steady_clock::duration spent);

}  // namespace podrun
