// The Prepare request of a job's run on one worker, and the workers' addresses (see
// run_request.h).
#include "launcher/attempt/run_request.h"

#include "launcher/spec/job_env.h"

namespace podrun {

std::vector<std::string> WorkerAddresses(const AttemptPlan& plan, const AttemptWorkers& workers) {
  std::vector<std::string> addresses;
  for (const PodWorker& pw : plan.pod.workers) {
    const AttemptWorker* w = workers.Find(pw.index);
    if (!pw.peer_address.empty()) {  // a discovered TPU VM: its internal IP
      addresses.push_back(pw.peer_address);
      continue;
    }
    addresses.push_back(w && w->error.empty() ? w->connection.link().peer_address() : pw.host.host);
  }
  return addresses;
}

AgentPrepareRequest MakeRunRequest(const AttemptPlan& plan, int index,
                                   const std::vector<std::string>& addresses, bool on_tpu_vms) {
  JobEnvParams params;
  params.job_id = plan.job.id;
  params.attempt = plan.attempt;
  params.resumed_from = plan.resumed_from;
  params.worker_index = index;
  params.worker_addresses = addresses;
  params.coordinator_port = plan.spec.coordinator_port;
  params.discovered_cloud_tpu = plan.pod.cloud_tpu || on_tpu_vms;
  params.megascale_port = plan.spec.megascale_port;
  if (plan.pod.slices > 1) {
    for (const PodWorker& pw : plan.pod.workers) params.worker_slices.push_back(pw.slice);
  }
  params.spec_env = plan.spec.env;
  params.secrets = plan.secrets;
  params.overrides = plan.overrides;
  AgentPrepareRequest request;
  request.job_id = plan.job.id;
  request.attempt = static_cast<uint32_t>(plan.attempt);
  request.worker_id = static_cast<uint32_t>(index);
  request.workdir = plan.spec.workdir;
  request.env = BuildJobEnv(params).vars;
  request.run = plan.spec.run;
  request.grace_seconds = static_cast<uint32_t>(plan.spec.grace_seconds);
  request.free_accelerators = plan.spec.free_accelerators;
  request.progress = plan.spec.progress;  // the workers read the steps (docs/design.md 19)
  return request;
}

}  // namespace podrun
