// The SSH host keys a MIG slice's VMs publish (guest attributes `hostkeys/`, as on Cloud TPU
// VMs; docs/reference.md, "Host keys from the API"): read through Compute Engine's API with
// gcloud's token (cloud_api_access.h), all VMs at once; where gcloud's access cannot be used,
// one `gcloud compute instances get-guest-attributes` per VM, a few at a time.
#pragma once

#include <string>
#include <vector>

#include "launcher/pod/pod_source.h"

namespace podrun {

// The keys of `workers` (the group's VMs, by name) by each VM's place in `workers` (its TPU worker
// number or not: the caller pins each VM's keys to that VM's own address); a VM that published
// none is absent (its key is then recorded on first contact). Throws Error naming the VM when
// the API or gcloud fails for another reason than the VM having published nothing yet (a token
// the API refuses is left to gcloud: the keys are then read through it).
TpuHostKeys ReadHostKeys(const SliceRef& mig, const std::string& what,
                         const std::vector<SourceWorker>& workers);

}  // namespace podrun
