// `podrun up` and `podrun down`: a TPU slice (a Cloud TPU node, a MIG slice) made to exist and be
// ready, or deleted, through the user's gcloud and its Provisioner (docs/reference.md,
// "Provisioning and recovery"); and the same provisioning as `launch` does it for a spec with
// pod.create.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"
#include "launcher/connect/pod.h"
#include "launcher/recovery/provisioner.h"

namespace podrun {

struct UpRequest {
  std::string spec_path;     // a spec with pod: {tpu or mig, zone, create: ...}; or:
  PodSettings pod;           // --tpu or --mig, --zone, --project (and create from the options)
  TpuCreate create;          // --accelerator-type, --version, --spot, ..., --machine-type, ...
  bool yes = false;          // -y: do not ask before creating
  bool keep_queued = false;  // --keep-queued: a queued resource created here outlives a failure
};

struct DownRequest {
  std::string spec_path;  // a spec naming pod.tpu or pod.mig, and pod.zone; or:
  PodSettings pod;        // --tpu or --mig, --zone, --project
  bool yes = false;       // -y: do not ask
};

// Makes the slice ready (Provisioner::Ensure): an existing ready one is used as it is; a node of
// another type or version is an error (2). Says the slice's workers and pins the host keys of
// VMs it made. 0, or 3 when gcloud failed.
ExitCode RunUp(const UpRequest& request);
// Deletes the slice (and its queued resource, or the template and policy podrun made for it),
// after asking on a terminal unless -y (not on a terminal, -y is needed: 2). Nothing to delete:
// said, 0.
ExitCode RunDown(const DownRequest& request);

// For `launch`: with pod.create (and a tpu or mig, and a zone), makes each slice it names ready
// (several for a multislice spec), before the pod is resolved; the slices podrun created, none
// without pod.create. The slices live in one zone: the first one's, found or made among
// create.fallback_zones, the others only there; settings->zone is set to it. Throws as
// Provisioner::Ensure.
std::vector<PodSourceRef> ProvisionSpecSlices(PodSettings* settings);
// For ResolvePod: pins the host keys the VMs of the `created` slices publish (only theirs), each
// VM's to its own address, as discovery describes them: before anything connects to them.
SliceDescribed PinCreatedSlices(const std::vector<PodSourceRef>& created);

// `podrun up` in the command table (command.h): its options, registered on its app.
Command UpCommand();

// `podrun down` in the command table (command.h): its options, registered on its app.
Command DownCommand();

}  // namespace podrun
