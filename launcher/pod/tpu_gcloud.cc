// Provisioning through gcloud (see tpu_gcloud.h).
#include "launcher/pod/tpu_gcloud.h"

#include <fmt/format.h>

#include <cstdlib>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/pod/tpu_reads.h"

namespace podrun {
namespace {

// Every command names the node first: checked here, before it reaches an argv.
void AddLocation(std::vector<std::string>& argv, const SliceRef& node) {
  CheckSliceRef(node);
  argv.insert(argv.end(), {"--zone", node.zone});
  if (node.project) argv.insert(argv.end(), {"--project", *node.project});
}

}  // namespace

std::string GcloudProgram() {
  const char* gcloud = std::getenv("PODRUN_GCLOUD");
  return gcloud && *gcloud ? gcloud : "gcloud";
}

std::string DescribeSliceRef(const SliceRef& q) {
  return fmt::format("tpu {} (zone {}{})", q.name, q.zone,
                     q.project ? ", project " + *q.project : std::string());
}

GcloudCommand GcloudCreateNodeCommand(const SliceRef& node, const TpuCreate& create) {
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",
                                   "tpu-vm",        "create",  node.name};
  AddLocation(argv, node);
  argv.insert(argv.end(),
              {"--accelerator-type", create.accelerator_type, "--version", create.version});
  if (create.spot) argv.push_back("--spot");
  if (create.preemptible) argv.push_back("--preemptible");
  argv.insert(argv.end(), {"--async", "--quiet"});
  return {std::move(argv), kGcloudCreateDeadline};
}

GcloudCommand GcloudCreateQueuedCommand(const SliceRef& node, const TpuCreate& create) {
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",      "queued-resources",
                                   "create",        node.name, "--node-id", node.name};
  AddLocation(argv, node);
  argv.insert(argv.end(),
              {"--accelerator-type", create.accelerator_type, "--runtime-version", create.version});
  if (create.spot) argv.push_back("--spot");
  if (create.valid_until) argv.insert(argv.end(), {"--valid-until-duration", *create.valid_until});
  argv.insert(argv.end(), {"--async", "--quiet"});
  return {std::move(argv), kGcloudCreateDeadline};
}

GcloudCommand GcloudDeleteNodeCommand(const SliceRef& node) {
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",
                                   "tpu-vm",        "delete",  node.name};
  AddLocation(argv, node);
  argv.push_back("--quiet");
  return {std::move(argv), kGcloudDeleteDeadline};
}

GcloudCommand GcloudDeleteQueuedCommand(const SliceRef& node) {
  std::vector<std::string> argv = {GcloudProgram(),    "compute", "tpus",
                                   "queued-resources", "delete",  node.name};
  AddLocation(argv, node);
  argv.insert(argv.end(), {"--force", "--quiet"});
  return {std::move(argv), kGcloudDeleteDeadline};
}

GcloudCommand GcloudDescribeQueuedCommand(const SliceRef& node) {
  std::vector<std::string> argv = {GcloudProgram(),    "compute",  "tpus",
                                   "queued-resources", "describe", node.name};
  AddLocation(argv, node);
  argv.push_back("--format=json");
  return {std::move(argv), kGcloudQueryDeadline};
}

GcloudCommand GcloudGuestAttributesCommand(const SliceRef& node) {
  std::vector<std::string> argv = {GcloudProgram(),        "compute", "tpus", "tpu-vm",
                                   "get-guest-attributes", node.name};
  AddLocation(argv, node);
  argv.push_back("--format=json");
  return {std::move(argv), kGcloudQueryDeadline};
}

std::optional<TpuNode> FindTpuNode(const SliceRef& node) {
  const std::string what = DescribeSliceRef(node);
  auto out = ReadTpuNode(node, what);
  if (!out) return std::nullopt;
  return ParseTpuNode(*out, what);
}

std::optional<QueuedResource> FindQueuedResource(const SliceRef& node) {
  const std::string what = "queued resource " + node.name;
  auto out = ReadQueuedResource(node, what);
  if (!out) return std::nullopt;
  return ParseQueuedResource(*out, what);
}

}  // namespace podrun
