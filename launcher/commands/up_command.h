// `podrun up` and `podrun down`: a TPU node made to exist and be READY, or deleted, through the
// user's gcloud (docs/reference.md, "Provisioning and recovery"); and the same provisioning as
// `launch` does it for a spec with pod.create.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"
#include "launcher/connect/pod.h"
#include "launcher/recovery/tpu_provisioner.h"

namespace podrun {

struct UpRequest {
  std::string spec_path;     // a spec with pod: {tpu, zone, create: ...}; or:
  PodSettings pod;           // --tpu, --zone, --project (and create from the options below)
  TpuCreate create;          // --accelerator-type, --version, --spot, --preemptible, --queued
  bool yes = false;          // -y: do not ask before creating
  bool keep_queued = false;  // --keep-queued: a queued resource created here outlives a failure
};

struct DownRequest {
  std::string spec_path;  // a spec naming pod.tpu and pod.zone; or:
  PodSettings pod;        // --tpu, --zone, --project
  bool yes = false;       // -y: do not ask
};

// Makes the node READY (TpuProvisioner::Ensure): an existing READY node is used as it is; one of
// another type or version is an error (2). Says the node's workers. 0, or 3 when gcloud failed.
ExitCode RunUp(const UpRequest& request);
// Deletes the node and its queued resource, after asking on a terminal unless -y (not on a
// terminal, -y is needed: 2). Nothing to delete: said, 0.
ExitCode RunDown(const DownRequest& request);

// For `launch`: with pod.create (and a tpu, zone), makes each node `tpu` names READY (several
// for a multislice spec), before the pod is resolved; the nodes podrun created, none without
// pod.create. Throws as TpuProvisioner::Ensure.
std::vector<TpuQuery> ProvisionSpecNodes(const PodSettings& settings);

// `podrun up` in the command table (command.h): its options, registered on its app.
Command UpCommand();

// `podrun down` in the command table (command.h): its options, registered on its app.
Command DownCommand();

}  // namespace podrun
