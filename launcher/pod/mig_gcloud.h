// The gcloud command lines that make and unmake a MIG slice (docs/reference.md, "TPU7x and other
// Compute Engine slices"; each request they make is in docs/gcloud-verified.md): a workload policy
// (HIGH_THROUGHPUT, the slice's topology), an instance template (machine type, image, Spot /
// Flex-start / standard) and the group, all named after the group. What podrun made carries the
// description prefix kMigMadeByPodrun, so that `down` deletes only those.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_discovery.h"

namespace podrun {

// The start of the description of every template and policy podrun makes.
inline constexpr std::string_view kMigMadeByPodrun = "podrun:";

// The names of what podrun makes for group `mig`: "<mig>-podrun" (shortened, with 5 hex digits
// of the whole name's SHA-256, when that would pass 63 characters). The template and the policy
// share it (they are in different collections). Two long names may share it: each part's
// description names its group exactly (MigPartOwnerOf).
std::string MigPartName(const std::string& mig);
// The region of a zone: "us-central1" for "us-central1-a".
std::string RegionOfZone(const std::string& zone);

// The command lines check the names first (Error(kUsage), tpu_names.h), and end with
// [--project P] --format=json (deletes: --quiet instead). Each comes with its deadline
// (gcloud_run.h): a create kGcloudCreateDeadline, a delete kGcloudDeleteDeadline, any other
// kGcloudQueryDeadline.

// `gcloud compute resource-policies create workload-policy P --type=HIGH_THROUGHPUT
// --accelerator-topology=T --region=R --description=...`.
GcloudCommand GcloudMigPolicyCreateCommand(const SliceRef& mig, const TpuCreate& create);
// `gcloud [beta] compute instance-templates create T --machine-type=M --image-family=F
// --image-project=IP --metadata=enable-guest-attributes=TRUE --description=...` with the
// provisioning model's flags (beta: flex_start); the metadata has the VMs publish their host
// keys as guest attributes.
GcloudCommand GcloudMigTemplateCreateCommand(const SliceRef& mig, const TpuCreate& create);
// `gcloud compute instance-groups managed create NAME --zone=Z --template=T --size=N
// --workload-policy=URL` (Compute Engine takes the policy only by its URL, `policy_url`: its
// selfLink; Spot: --default-action-on-vm-failure=do-nothing: podrun remakes the slice as a
// whole; flex_start: --size=0, the VMs come from a resize request).
GcloudCommand GcloudMigGroupCreateCommand(const SliceRef& mig, const TpuCreate& create,
                                          const std::string& policy_url);
// flex_start: `gcloud compute instance-groups managed resize-requests create NAME
// --resize-request=NAME-podrun --resize-by=N --requested-run-duration=D --zone=Z`: every VM at
// once or none.
GcloudCommand GcloudMigResizeRequestCommand(const SliceRef& mig, const TpuCreate& create);
// `gcloud compute instance-groups managed delete NAME --zone=Z --quiet` (waits until gone).
GcloudCommand GcloudMigGroupDeleteCommand(const SliceRef& mig);
// `gcloud compute instance-groups managed describe NAME --zone=Z`: the group itself.
GcloudCommand GcloudMigGroupDescribeCommand(const SliceRef& mig);
// `gcloud compute instance-templates describe|delete T` and `gcloud compute resource-policies
// describe|delete P --region=R`: `verb` is "describe" or "delete".
GcloudCommand GcloudMigTemplateCommand(const SliceRef& mig, const std::string& verb);
GcloudCommand GcloudMigPolicyCommand(const SliceRef& mig, const std::string& verb);
// `gcloud compute instances get-guest-attributes I --zone=Z --query-path=hostkeys/`.
GcloudCommand GcloudMigHostKeysCommand(const SliceRef& mig, const std::string& instance);

// Whether the group a describe printed repairs a VM that fails or is terminated (its
// instanceLifecyclePolicy.defaultActionOnFailure is REPAIR, Compute Engine's default: podrun's
// standard and flex-start slices), rather than leaving it so (DO_NOTHING: podrun's Spot slices,
// which only a recreation brings back). Throws Error(kUnreachable) "WHAT: ..." when `json` is not
// a group.
bool MigRepairsFailedVms(std::string_view describe_json, const std::string& what);
// True when describe's JSON has a description that starts with kMigMadeByPodrun.
bool MadeByPodrun(std::string_view describe_json);

// What the description of a template or policy podrun made says: the group it was made for, and
// the digest of the settings it was made with ("" when an older podrun made it without one;
// `mig` "" when the description names no group).
struct MigPartOwner {
  std::string mig;
  std::string settings;
};
// nullopt when podrun did not make it (not MadeByPodrun).
std::optional<MigPartOwner> MigPartOwnerOf(std::string_view describe_json);
// The digest of the settings GcloudMigPolicyCreateCommand / GcloudMigTemplateCreateCommand write
// into their description (a SHA-256 of their flags): a part whose digest differs was made with
// other settings (the spec's create: changed) and is made again.
std::string MigPolicyDigest(const SliceRef& mig, const TpuCreate& create);
std::string MigTemplateDigest(const TpuCreate& create);
// The selfLink of what a create or describe printed (an object, or a list of one, as gcloud
// prints a create's result); "" when there is none or it is not a Compute Engine URL of a
// resource policy.
std::string PolicyUrlOf(std::string_view json);

}  // namespace podrun
