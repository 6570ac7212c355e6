// The TPU worker number of each VM of a discovered pod whose API does not show it (a MIG slice:
// docs/reference.md, "Discovery"), asked of the VMs themselves: each worker's agent reads its
// VM's metadata server (agent-worker-number), as for --hosts on TPU VMs. Worker K must be the
// VM whose TPU worker number is K, never the K-th instance name.
#pragma once

#include <vector>

#include "launcher/connect/pod.h"

namespace podrun {

// Connects to the agents of `indexes` of `pod` (installing them where needed) and returns each
// one's TPU worker number, in the order of `indexes`. Throws Error(kUnreachable) naming every
// worker that cannot be reached, or whose VM gives no number (not a TPU VM), and what to do.
std::vector<int> AskTpuWorkerNumbers(const Pod& pod, const std::vector<int>& indexes);

}  // namespace podrun
