// The spec's `mounts:` as one worker's Mount request: "workerK" in an nfs server or an sshfs
// source becomes worker K's internal address, and the nfs server's index is named so that
// worker exports instead of mounting.
#pragma once

#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/spec/spec.h"

namespace podrun {

// `addresses`: every worker's internal address, rank order. Throws Error(kUsage) for a
// "workerK" that is not part of the pod.
AgentMountRequest MountRequestFor(const std::vector<Mount>& mounts, int worker,
                                  const std::vector<std::string>& addresses);

// The indexes of the workers that serve an nfs mount (they go first).
std::vector<int> NfsServers(const std::vector<Mount>& mounts, size_t pod_size);

}  // namespace podrun
