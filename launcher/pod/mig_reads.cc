// A MIG slice's reads through the API or gcloud (see mig_reads.h).
#include "launcher/pod/mig_reads.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launcher/pod/cloud_api_get.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/mig_gcloud.h"
#include "launcher/pod/mig_instances.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {

std::optional<std::string> ReadMigManagedInstances(const SliceRef& mig, const std::string& what) {
  CheckSliceRef(mig);
  using Answer = std::optional<std::string>;
  return ThroughApiElseGcloud<Answer>(
      CloudApi::kCompute, mig.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        return CloudApiList(access, CloudApi::kCompute,
                            fmt::format("projects/{}/zones/{}/instanceGroupManagers/{}/"
                                        "listManagedInstances?maxResults=500",
                                        project, mig.zone, mig.name),
                            "managedInstances", /*post=*/true, what);
      },
      [&] { return RunGcloudUnlessNotFound(GcloudMigListInstancesCommand(mig), what); });
}

std::optional<std::string> ReadMigPart(const SliceRef& mig, bool policy, const std::string& what) {
  CheckSliceRef(mig);
  return ThroughApiElseGcloud<std::optional<std::string>>(
      CloudApi::kCompute, mig.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        const std::string path =
            policy ? fmt::format("projects/{}/regions/{}/resourcePolicies/{}", project,
                                 RegionOfZone(mig.zone), MigPartName(mig.name))
                   : fmt::format("projects/{}/global/instanceTemplates/{}", project,
                                 MigPartName(mig.name));
        return CloudApiGet(access, CloudApi::kCompute, path, what);
      },
      [&] {
        return RunGcloudUnlessNotFound(policy ? GcloudMigPolicyCommand(mig, "describe")
                                              : GcloudMigTemplateCommand(mig, "describe"),
                                       what);
      });
}

std::string ReadMigVms(const SliceRef& mig, const std::vector<std::string>& names,
                       const std::string& what) {
  CheckSliceRef(mig);
  for (const std::string& name : names) {
    if (std::string problem = TpuNodeNameProblem(name); !problem.empty()) {
      throw UsageError(fmt::format("{}: instance name '{}': {}", what, name, problem));
    }
  }
  if (names.empty()) return "[]";
  return ThroughApiElseGcloud<std::string>(
      CloudApi::kCompute, mig.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        // Names are checked VM names (lowercase letters, digits, hyphens): a regex of them
        // matches only them.
        const std::string filter = fmt::format("name eq \"({})\"", fmt::join(names, "|"));
        const std::optional<std::string> listed =
            CloudApiList(access, CloudApi::kCompute,
                         fmt::format("projects/{}/zones/{}/instances?maxResults=500&filter={}",
                                     project, mig.zone, CloudApiQueryValue(filter)),
                         "items", /*post=*/false, what);
        return listed.value_or("[]");  // no such zone: no VMs there
      },
      [&] { return RunGcloud(GcloudMigInstancesCommand(mig, names), what); });
}

}  // namespace podrun
