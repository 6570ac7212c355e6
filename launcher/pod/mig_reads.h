// The reads of a MIG slice, `instance-groups managed list-instances`, `instances list` of its
// VMs and `describe` of its template and policy: through Compute Engine's API with gcloud's token
// where podrun may use it (cloud_api_get.h: tens of milliseconds, where each gcloud is a second
// of Python start-up, on the path of every poll and recovery), else through gcloud. Either way the
// answer is what gcloud prints (a JSON list), read by mig_instances.h.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/slice_ref.h"

namespace podrun {

// The group's managed instances (listManagedInstances); nullopt when the group does not exist.
// Throws GcloudError as RunGcloud.
std::optional<std::string> ReadMigManagedInstances(const SliceRef& mig, const std::string& what);

// The workload policy (`policy`) or the instance template podrun makes for the slice
// (MigPartName), as `gcloud ... describe --format=json` prints it; nullopt when it does not exist.
// Throws GcloudError as RunGcloud.
std::optional<std::string> ReadMigPart(const SliceRef& mig, bool policy, const std::string& what);

// The VMs named `names` in the group's zone (others in the zone may be in the answer too).
// Throws GcloudError as RunGcloud.
std::string ReadMigVms(const SliceRef& mig, const std::vector<std::string>& names,
                       const std::string& what);

}  // namespace podrun
