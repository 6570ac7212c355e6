// Before a restart: the wait until the pod's TPU nodes are READY again, and pointing the pod's
// workers at their nodes' current addresses (a recreated node has new ones).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/connect/pod.h"

namespace podrun {

// Points the workers of `pod` at the endpoints of `nodes` (one per slice, in order); returns
// the indexes of those whose address changed. Throws Error(kUnreachable) when a node has
// another number of workers than its slice.
std::vector<int> PointPodAtNodes(Pod& pod, const std::vector<TpuNode>& nodes);

// How often WaitForReadyNodes asks gcloud: 30 s, or $PODRUN_TPU_POLL_SECONDS (for tests).
std::chrono::seconds ReadyPollInterval();

// Waits until every node of `pod` (discovered with --tpu; any other pod returns at once) is
// READY, asking gcloud afresh every `poll` (`wait(poll)` sleeps and returns false when the user
// gave up: Ctrl-C), saying on stderr what it waits for. Then points the pod's workers at their
// nodes' current addresses (a node recreated after a preemption has new ones) and returns the
// indexes of the workers whose address changed. nullopt: the user gave up. Throws
// Error(kUnreachable) when gcloud fails or a node came back with another number of workers.
std::optional<std::vector<int>> WaitForReadyNodes(
    Pod& pod, const std::filesystem::path& cache_dir, std::chrono::seconds poll,
    const std::function<bool(std::chrono::seconds)>& wait);

}  // namespace podrun
