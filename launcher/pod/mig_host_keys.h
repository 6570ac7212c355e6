// The SSH host keys a MIG slice's VMs publish (guest attributes `hostkeys/`, as on Cloud TPU
// VMs; docs/reference.md, "Host keys from the API"): one `gcloud compute instances
// get-guest-attributes` per VM, a few at a time.
#pragma once

#include <string>
#include <vector>

#include "launcher/pod/pod_source.h"

namespace podrun {

// The keys of `workers` (the group's VMs, each with its TPU worker number) by TPU worker number;
// a VM that published none, or whose number is not known, is absent (its key is then recorded on
// first contact). Throws Error naming the VM when gcloud fails for another reason than the VM
// having published nothing yet.
TpuHostKeys ReadHostKeys(const TpuQuery& mig, const std::string& what,
                         const std::vector<SourceWorker>& workers);

}  // namespace podrun
