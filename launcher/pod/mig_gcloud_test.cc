// Tests of the command lines that make and unmake a MIG slice (mig_gcloud.h), of what a MIG
// slice's create: must say (tpu_create.h), and of reading a stockout from list-instances.
#include "launcher/pod/mig_gcloud.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "launcher/base/error.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/mig_instances.h"

namespace podrun {
namespace {

bool Has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}
bool Has(const GcloudCommand& command, const std::string& word) { return Has(command.argv, word); }

TpuCreate Spot() {
  TpuCreate c;
  c.machine_type = "tpu7x-standard-4t";
  c.topology = "2x2x4";
  c.image_family = "fam";
  c.image_project = "img-proj";
  c.spot = true;
  return c;
}

TEST(MigGcloudTest, ASpotSliceIsAPolicyATemplateAndAGroupOfAllItsVms) {
  const SliceRef mig{"slice-1", "us-central1-c", "proj-1"};
  EXPECT_EQ("", MigCreateProblem(Spot()));
  EXPECT_EQ(4, MigVmCount(Spot()));
  const auto policy = GcloudMigPolicyCreateCommand(mig, Spot());
  EXPECT_TRUE(Has(policy, "workload-policy"));
  EXPECT_TRUE(Has(policy, "slice-1-podrun"));
  EXPECT_TRUE(Has(policy, "--type=HIGH_THROUGHPUT"));
  EXPECT_TRUE(Has(policy, "--accelerator-topology=2x2x4"));
  EXPECT_TRUE(Has(policy, "--region=us-central1"));
  EXPECT_TRUE(Has(policy, "--project"));
  EXPECT_TRUE(Has(policy, "--description=podrun: workload policy of MIG slice-1 (settings " +
                              MigPolicyDigest(mig, Spot()) + ")"));
  const auto tpl = GcloudMigTemplateCreateCommand(mig, Spot()).argv;
  EXPECT_EQ("compute", tpl[1]);  // GA: no beta for Spot
  EXPECT_TRUE(Has(tpl, "--machine-type=tpu7x-standard-4t"));
  EXPECT_TRUE(Has(tpl, "--provisioning-model=SPOT"));
  // Without it a Compute Engine VM publishes no guest attributes: no host keys to pin.
  EXPECT_TRUE(Has(tpl, "--metadata=enable-guest-attributes=TRUE"));
  EXPECT_TRUE(Has(tpl, "--instance-termination-action=STOP"));
  const std::string url =
      "https://www.googleapis.com/compute/v1/projects/proj-1/regions/us-central1/"
      "resourcePolicies/slice-1-podrun";
  EXPECT_EQ(url, PolicyUrlOf("[{\"selfLink\": \"" + url + "\"}]"));
  EXPECT_EQ(
      "",
      PolicyUrlOf(
          R"({"selfLink": "https://x/compute/v1/projects/p/regions/r/resourcePolicies/a --evil"})"));
  const auto group = GcloudMigGroupCreateCommand(mig, Spot(), url).argv;
  EXPECT_TRUE(Has(group, "--size=4"));
  EXPECT_TRUE(Has(group, "--template=slice-1-podrun"));
  EXPECT_TRUE(Has(group, "--workload-policy=" + url));
  // Compute Engine does not remake a preempted Spot VM of a slice: podrun remakes the slice.
  EXPECT_TRUE(Has(group, "--default-action-on-vm-failure=do-nothing"));
  EXPECT_EQ("--format=json", group.back());
  EXPECT_EQ("--quiet", GcloudMigGroupDeleteCommand(mig).argv.back());
  EXPECT_TRUE(Has(GcloudMigPolicyCommand(mig, "delete"), "--region=us-central1"));
  EXPECT_TRUE(Has(GcloudMigHostKeysCommand(mig, "slice-1-x2ab"), "--query-path=hostkeys/"));
}

TEST(MigGcloudTest, FlexStartVmsComeFromOneResizeRequestForTheWholeSlice) {
  TpuCreate flex = Spot();
  flex.spot = false;
  flex.provisioning = "flex_start";
  EXPECT_NE(std::string::npos, MigCreateProblem(flex).find("needs max_run_duration"));
  flex.max_run_duration = "7d";
  ASSERT_EQ("", MigCreateProblem(flex));
  const SliceRef mig{"slice-1", "us-central1-c", std::nullopt};
  const auto tpl = GcloudMigTemplateCreateCommand(mig, flex).argv;
  EXPECT_EQ("beta", tpl[1]);
  EXPECT_TRUE(Has(tpl, "--provisioning-model=FLEX_START"));
  EXPECT_TRUE(Has(tpl, "--metadata=enable-guest-attributes=TRUE"));
  EXPECT_TRUE(Has(tpl, "--max-run-duration=7d"));
  EXPECT_TRUE(Has(tpl, "--instance-termination-action=DELETE"));
  EXPECT_FALSE(Has(tpl, "--project"));
  EXPECT_TRUE(Has(GcloudMigGroupCreateCommand(mig, flex, "u"), "--size=0"));
  const auto resize = GcloudMigResizeRequestCommand(mig, flex);
  EXPECT_TRUE(Has(resize, "--resize-by=4"));
  EXPECT_TRUE(Has(resize, "--requested-run-duration=7d"));
}

// Each command comes with its deadline from its builder, whatever the group is called.
TEST(MigGcloudTest, EachCommandComesWithItsDeadline) {
  const SliceRef mig{"delete", "us-central1-c", std::nullopt};
  EXPECT_EQ(kGcloudCreateDeadline, GcloudMigPolicyCreateCommand(mig, Spot()).deadline);
  EXPECT_EQ(kGcloudCreateDeadline, GcloudMigTemplateCreateCommand(mig, Spot()).deadline);
  EXPECT_EQ(kGcloudCreateDeadline, GcloudMigGroupCreateCommand(mig, Spot(), "u").deadline);
  EXPECT_EQ(kGcloudDeleteDeadline, GcloudMigGroupDeleteCommand(mig).deadline);
  EXPECT_EQ(kGcloudDeleteDeadline, GcloudMigTemplateCommand(mig, "delete").deadline);
  EXPECT_EQ(kGcloudDeleteDeadline, GcloudMigPolicyCommand(mig, "delete").deadline);
  EXPECT_EQ(kGcloudQueryDeadline, GcloudMigTemplateCommand(mig, "describe").deadline);
  EXPECT_EQ(kGcloudQueryDeadline, GcloudMigPolicyCommand(mig, "describe").deadline);
  EXPECT_EQ(kGcloudQueryDeadline, GcloudMigHostKeysCommand(mig, "delete-x2ab").deadline);
  EXPECT_EQ(std::chrono::minutes(2), kGcloudQueryDeadline);
  EXPECT_EQ(std::chrono::minutes(5), kGcloudCreateDeadline);
  EXPECT_EQ(std::chrono::minutes(30), kGcloudDeleteDeadline);
}

TEST(MigGcloudTest, NamesStayWithinTheApisLimitAndHostileNamesAreRefused) {
  const std::string long_name(60, 'a');
  EXPECT_LE(MigPartName(long_name).size(), 63u);
  EXPECT_NE(MigPartName(long_name), MigPartName(long_name.substr(0, 59) + "b"));
  EXPECT_THROW(GcloudMigGroupCreateCommand({"--zone=x", "z", std::nullopt}, Spot(), "u"), Error);
  EXPECT_THROW(GcloudMigHostKeysCommand({"s", "z", std::nullopt}, "--evil"), Error);
  TpuCreate bad = Spot();
  bad.topology = "2x2x4; rm -rf /";
  EXPECT_NE("", MigCreateProblem(bad));
  bad = Spot();
  bad.machine_type = "tpu7x-standard";  // no chips a VM
  EXPECT_NE(std::string::npos, MigCreateProblem(bad).find("not a whole number"));
}

TEST(MigGcloudTest, ComputeEnginesNotFoundIsToldInEachOfItsForms) {
  EXPECT_EQ(GcloudFailure::kNotFound,
            ClassifyGcloudWords("ERROR: (gcloud.compute.instance-templates.describe) Could not "
                                "fetch resource:\n - The resource 'projects/p/global/"
                                "instanceTemplates/s-podrun' was not found\n"));
  EXPECT_EQ(GcloudFailure::kNotFound,
            ClassifyGcloudWords("ERROR: (gcloud.compute.instance-groups.managed.list-instances) "
                                "Some requests did not succeed:\n - The resource 'projects/p/"
                                "zones/z/instanceGroupManagers/s' was not found\n"));
  EXPECT_EQ(GcloudFailure::kNotFound,
            ClassifyGcloudWords("ERROR: (gcloud.compute.instances.get-guest-attributes) "
                                "HTTPError 404: The resource 'projects/p/zones/z/instances/i' was "
                                "not found"));
  EXPECT_EQ(GcloudFailure::kExists,
            ClassifyGcloudWords("ERROR: (gcloud.compute.resource-policies.create) Could not "
                                "fetch resource:\n - The resource 'projects/p/regions/r/"
                                "resourcePolicies/s-podrun' already exists\n"));
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords("ERROR: (gcloud.compute.instance-templates.delete) Could not "
                                "fetch resource:\n - The instance_template resource 'x' is "
                                "already being used by 'y'"));
}

TEST(MigGcloudTest, OnlyWhatPodrunMadeIsItsToDelete) {
  EXPECT_TRUE(MadeByPodrun(R"({"description": "podrun: instance template of MIG s"})"));
  EXPECT_FALSE(MadeByPodrun(R"({"description": "the team's template"})"));
  EXPECT_FALSE(MadeByPodrun(R"({"name": "s-podrun"})"));
  EXPECT_FALSE(MadeByPodrun("not json"));
}

// A reused part is matched by its exact group and a digest of its settings, both written into
// its description; the shortened names take a hash that every build computes alike.
TEST(MigGcloudTest, PartsNameTheirGroupAndTheirSettings) {
  const std::string long_name(60, 'a');
  EXPECT_EQ(std::string(50, 'a') + "-11ee3-podrun", MigPartName(long_name));  // SHA-256
  const SliceRef mig{"slice-1", "us-central1-c", std::nullopt};
  const auto tpl = GcloudMigTemplateCreateCommand(mig, Spot()).argv;
  const std::string digest = MigTemplateDigest(Spot());
  EXPECT_EQ(16u, digest.size());
  EXPECT_TRUE(
      Has(tpl, "--description=podrun: instance template of MIG slice-1 (settings " + digest + ")"));
  std::optional<MigPartOwner> owner = MigPartOwnerOf(
      R"({"description": "podrun: instance template of MIG slice-1 (settings )" + digest + ")\"}");
  ASSERT_TRUE(owner);
  EXPECT_EQ("slice-1", owner->mig);
  EXPECT_EQ(digest, owner->settings);
  // Any setting the template is made with changes the digest; the policy's likewise.
  TpuCreate changed = Spot();
  changed.image_family = "tpu-vm-v2";
  EXPECT_NE(digest, MigTemplateDigest(changed));
  changed = Spot();
  changed.provisioning = "standard";
  changed.spot = false;
  EXPECT_NE(digest, MigTemplateDigest(changed));
  changed = Spot();
  changed.topology = "4x4x4";
  EXPECT_NE(MigPolicyDigest(mig, Spot()), MigPolicyDigest(mig, changed));
  EXPECT_EQ(digest, MigTemplateDigest(Spot()));
  // An older podrun's description: the group, no settings.
  owner = MigPartOwnerOf(R"({"description": "podrun: workload policy of MIG slice-1"})");
  ASSERT_TRUE(owner);
  EXPECT_EQ("slice-1", owner->mig);
  EXPECT_EQ("", owner->settings);
  // Another group's (two long names shortened alike) is not this one's.
  EXPECT_EQ(std::string(50, 'a') + "-b",
            MigPartOwnerOf(R"({"description": "podrun: instance template of MIG )" +
                           std::string(50, 'a') + "-b (settings 0123456789abcdef)\"}")
                ->mig);
  EXPECT_FALSE(MigPartOwnerOf(R"({"description": "the team's template"})"));
}

TEST(MigGcloudTest, AStockoutWhileTheGroupMakesItsVmsIsRead) {
  const auto instances = ParseManagedInstances(R"([{"name": "s-ab12", "instanceStatus": "",
    "currentAction": "CREATING", "lastAttempt": {"errors": {"errors": [
      {"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": "no capacity in the zone"}]}}}])",
                                               "mig s");
  ASSERT_EQ(1u, instances.size());
  EXPECT_EQ("ZONE_RESOURCE_POOL_EXHAUSTED", instances[0].last_error_code);
  EXPECT_TRUE(IsMigStockoutCode(instances[0].last_error_code));
  EXPECT_FALSE(IsMigStockoutCode("QUOTA_EXCEEDED"));
  // The code field decides, not a message that happens to begin with the word.
  EXPECT_FALSE(IsMigStockoutCode("ZONE_RESOURCE_POOL_EXHAUSTED_SOON"));
}

}  // namespace
}  // namespace podrun
