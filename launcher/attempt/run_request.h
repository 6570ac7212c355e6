// The Prepare request of a job's `run` on one worker: its environment (docs/reference.md, "What the
// `run` process gets"), workdir and the spec's settings. The setup's request is made from it.
// Also the addresses the workers reach each other at, which it, sync and mounts are given.
#pragma once

#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"

namespace podrun {

// The addresses the workers reach each other at, rank order (PODRUN_WORKER_HOSTS): a discovered
// TPU VM's internal IP, else the address its link reached it at, or its host while it is out.
std::vector<std::string> WorkerAddresses(const AttemptPlan& plan, const AttemptWorkers& workers);

// Worker `index`'s request; `addresses`: every worker's, rank order, as they reach each other.
// `on_tpu_vms`: the workers are Cloud TPU VMs (TPU_WORKER_* are the runtime's). Throws Error
// (kUsage) from BuildJobEnv.
AgentPrepareRequest MakeRunRequest(const AttemptPlan& plan, int index,
                                   const std::vector<std::string>& addresses, bool on_tpu_vms);

}  // namespace podrun
