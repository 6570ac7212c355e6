// SourceProvisioner: a Provisioner (provisioner.h) for any pod source that only needs its
// PodSource: a MIG slice today. Creates through PodSource::Create (retried after a stockout
// gcloud reports, until capacity_wait), then waits with PodSource::Now until every VM can run a
// job, the source's state on the live line ("mig slice-1: CREATING 40s") and, when it changes, on
// stderr; a stockout the API reports while the VMs are made (Compute Engine keeps trying) is
// waited out until capacity_wait too. Whatever a failed or interrupted create made is deleted.
#pragma once

#include <memory>

#include "launcher/recovery/provisioner.h"

namespace podrun {

// The provisioner of `ref`, whose source is `source`.
std::unique_ptr<Provisioner> MakeSourceProvisioner(const PodSourceRef& ref,
                                                   std::unique_ptr<PodSource> source,
                                                   TpuCreate create, std::chrono::seconds poll,
                                                   TpuWait wait, TpuProvisionerOptions options);

}  // namespace podrun
