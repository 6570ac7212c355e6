// What a lost worker of a discovered TPU pod means: its node is asked afresh, so that a
// preempted (or otherwise not READY) node is named as such in the launch's report, `status` and
// the job record, not reported as a bare "lost"; and, before a restart, the wait until the
// pod's nodes are READY again, at their new addresses.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/connect/pod_options.h"

namespace podrun {

// For worker `index` of `pod`: "preempted: TPU node NAME is PREEMPTED (gcloud)" or "TPU node
// NAME is STATE, not READY (gcloud)" when gcloud now reports its node in any state but READY;
// nullopt when the node is READY, gcloud cannot answer, or the pod was not discovered with --tpu.
// Blocks for one gcloud describe; `cache_dir` gets the fresh answer.
std::optional<std::string> NodeStateOfLostWorker(const Pod& pod, int index,
                                                 const std::filesystem::path& cache_dir);

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
