// The Prepare request of a job's `run` on one worker: its environment (docs/reference.md, "What the
// `run` process gets"), workdir and the spec's settings. The setup's request is made from it.
#pragma once

#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/attempt/attempt_plan.h"

namespace podrun {

// Worker `index`'s request; `addresses`: every worker's, rank order, as they reach each other.
// `on_tpu_vms`: the workers are Cloud TPU VMs (TPU_WORKER_* are the runtime's). Throws Error
// (kUsage) from BuildJobEnv.
AgentPrepareRequest MakeRunRequest(const AttemptPlan& plan, int index,
                                   const std::vector<std::string>& addresses, bool on_tpu_vms);

}  // namespace podrun
