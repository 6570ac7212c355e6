// A Cloud TPU node's reads through the API or gcloud (see tpu_reads.h).
#include "launcher/pod/tpu_reads.h"

#include <fmt/format.h>

#include "launcher/pod/cloud_api_get.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {
namespace {

using Answer = std::optional<std::string>;

// v2/projects/P/locations/ZONE/COLLECTION/NAME
std::string PathOf(const SliceRef& node, const std::string& project, const char* collection) {
  return fmt::format("v2/projects/{}/locations/{}/{}/{}", project, node.zone, collection,
                     node.name);
}

// The node's `collection`/NAME through the TPU API, else `describe` through gcloud; nullopt when
// it does not exist.
Answer ReadOrNone(const SliceRef& node, const char* collection, const GcloudCommand& describe,
                  const std::string& what) {
  CheckSliceRef(node);
  return ThroughApiElseGcloud<Answer>(
      CloudApi::kTpu, node.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        return CloudApiGet(access, CloudApi::kTpu, PathOf(node, project, collection), what);
      },
      [&] { return RunGcloudUnlessNotFound(describe, what); });
}

}  // namespace

std::optional<std::string> ReadTpuNode(const SliceRef& node, const std::string& what) {
  return ReadOrNone(node, "nodes", {GcloudDescribeCommand(node), kGcloudQueryDeadline}, what);
}

std::string ReadExistingTpuNode(const SliceRef& node, const std::string& what) {
  CheckSliceRef(node);
  return ThroughApiElseGcloud<std::string>(
      CloudApi::kTpu, node.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        std::optional<std::string> answer =
            CloudApiGet(access, CloudApi::kTpu, PathOf(node, project, "nodes"), what);
        if (!answer) {
          throw GcloudError(ExitCode::kUnreachable,
                            fmt::format("{}: NOT_FOUND: Resource '{}' was not found", what,
                                        PathOf(node, project, "nodes").substr(3)),
                            GcloudFailure::kNotFound);
        }
        return std::move(*answer);
      },
      [&] { return RunGcloud(GcloudDescribeCommand(node), what); });
}

std::optional<std::string> ReadQueuedResource(const SliceRef& node, const std::string& what) {
  return ReadOrNone(node, "queuedResources", GcloudDescribeQueuedCommand(node), what);
}

std::string ReadTpuGuestAttributes(const SliceRef& node, const std::string& what) {
  CheckSliceRef(node);
  return ThroughApiElseGcloud<std::string>(
      CloudApi::kTpu, node.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        std::optional<std::string> answer =
            CloudApiPost(access, CloudApi::kTpu,
                         PathOf(node, project, "nodes") + ":getGuestAttributes", "{}", what);
        if (!answer) {
          throw GcloudError(ExitCode::kUnreachable,
                            fmt::format("{}: the TPU node {} was not found", what, node.name),
                            GcloudFailure::kNotFound);
        }
        return std::move(*answer);
      },
      [&] { return RunGcloud(GcloudGuestAttributesCommand(node), what); });
}

}  // namespace podrun
