// A Compute Engine managed instance group of TPU VMs (a MIG slice: v5p, v6e, TPU7x) as gcloud
// shows it (docs/reference.md, "Discovery"; the request paths and JSON in
// docs/gcloud-verified.md): `gcloud compute instance-groups managed list-instances` gives the
// group's instances with their status and current action, `gcloud compute instances list`
// their addresses and metadata.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_discovery.h"

namespace podrun {

// `gcloud compute instance-groups managed list-instances NAME --zone Z [--project P]
// --format=json`. Checks the names first (Error(kUsage), tpu_names.h).
std::vector<std::string> GcloudMigListInstancesCommand(const SliceRef& mig);
// `gcloud compute instances list --zones Z [--project P] --filter=name=( A B ... ) --format=json`:
// the named instances (names checked as the group's: Error(kUsage)).
std::vector<std::string> GcloudMigInstancesCommand(const SliceRef& mig,
                                                   const std::vector<std::string>& instances);

// One instance of the group as list-instances shows it.
struct ManagedInstance {
  std::string name;
  std::string status;          // instanceStatus: RUNNING, STAGING, STOPPING, TERMINATED, ...
  std::string current_action;  // NONE when the group is done with it; CREATING, RECREATING, ...
  // The group's last failed try to make it (lastAttempt.errors[0]): its code field, e.g.
  // "ZONE_RESOURCE_POOL_EXHAUSTED" while capacity is short, and "CODE: message" for people;
  // both "" when none.
  std::string last_error_code = {};
  std::string last_error = {};
};

// True when `code` (a ManagedInstance's last_error_code) says the zone has no capacity now.
bool IsMigStockoutCode(const std::string& code);

// Reads list-instances' JSON (a list of managed instances). Throws Error(kUnreachable) "WHAT:
// gcloud's answer ..." when it is not that, or an instance name is not one (tpu_names.h).
std::vector<ManagedInstance> ParseManagedInstances(std::string_view json, const std::string& what);

// Why the group cannot run a job ("" when it can), naming the first instance that is not RUNNING
// or that the group is still acting on (the group is not stable), and its state; `mig_name`
// starts the message: "mig slice-1: instance slice-1-x2ab is STOPPING (action RECREATING), not
// RUNNING".
std::string MigNotReady(const std::string& mig_name, const std::vector<ManagedInstance>& instances);

// Reads `instances list`'s JSON into the group's workers, in the order of `instances` (each must
// be in the answer): addresses from networkInterfaces[0] (networkIP, accessConfigs[0].natIP),
// the TPU worker number from the metadata item `agent-worker-number` (or `tpu-env`'s WORKER_ID)
// when the API shows it. `project`, if given, is set from the instances' selfLink. Throws as
// ParseManagedInstances, also for a missing instance or a bad address.
std::vector<SourceWorker> ParseMigInstances(std::string_view json,
                                            const std::vector<ManagedInstance>& instances,
                                            const std::string& what, std::string* project);

}  // namespace podrun
