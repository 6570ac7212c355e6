// The gcloud command lines podrun runs to provision Cloud TPU nodes (docs/reference.md,
// "Provisioning and recovery"), and running them: the user's own gcloud ($PODRUN_GCLOUD, else
// `gcloud` on PATH), so that no second set of credentials exists (docs/design.md decision 16).
// Every command's failure carries gcloud's own words.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/pod/tpu_node.h"

namespace podrun {

// The command lines check the node's names first: Error(kUsage) for a name the API would not
// allow (tpu_names.h), so that none is read by gcloud as an option. Each comes with its deadline
// (gcloud_run.h): a create kGcloudCreateDeadline, a delete kGcloudDeleteDeadline, any other
// kGcloudQueryDeadline.

// $PODRUN_GCLOUD, else "gcloud".
std::string GcloudProgram();

// `gcloud compute tpus tpu-vm create NAME --zone Z [--project P] --accelerator-type T --version V
// [--spot|--preemptible] --async --quiet`; returns at once (the caller polls describe).
GcloudCommand GcloudCreateNodeCommand(const SliceRef& node, const TpuCreate& create);
// `gcloud compute tpus queued-resources create NAME --node-id NAME --zone Z [--project P]
// --accelerator-type T --runtime-version V [--spot] [--valid-until-duration D] --async --quiet`:
// the queued resource takes the node's name.
GcloudCommand GcloudCreateQueuedCommand(const SliceRef& node, const TpuCreate& create);
// `gcloud compute tpus tpu-vm delete NAME --zone Z [--project P] --quiet`: waits until deleted.
GcloudCommand GcloudDeleteNodeCommand(const SliceRef& node);
// `gcloud compute tpus queued-resources delete NAME --zone Z [--project P] --force --quiet`:
// deletes the queued resource and its node; waits until deleted.
GcloudCommand GcloudDeleteQueuedCommand(const SliceRef& node);
// `gcloud compute tpus queued-resources describe NAME --zone Z [--project P] --format=json`.
GcloudCommand GcloudDescribeQueuedCommand(const SliceRef& node);
// `gcloud compute tpus tpu-vm get-guest-attributes NAME --zone Z [--project P] --format=json`:
// what each worker VM published, among it its SSH host keys (tpu_host_keys.h).
GcloudCommand GcloudGuestAttributesCommand(const SliceRef& node);

// The node, or nullopt when gcloud says NOT_FOUND; other failures throw as RunGcloud
// (gcloud_run.h).
std::optional<TpuNode> FindTpuNode(const SliceRef& node);
// The node's queued resource (named after the node), or nullopt when there is none.
std::optional<QueuedResource> FindQueuedResource(const SliceRef& node);

// "tpu NAME (zone Z[, project P])", for messages.
std::string DescribeSliceRef(const SliceRef& node);

}  // namespace podrun
