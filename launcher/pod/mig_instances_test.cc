// Tests of reading a MIG slice from gcloud: list-instances' states (an instance not RUNNING, a
// group not stable, named in the message), the instances' addresses and TPU worker numbers from
// metadata, the command lines, and answers that are not what they should be. The JSON is what
// gcloud 528 printed against scripts/fake-tpu-api (docs/gcloud-verified.md).
#include "launcher/pod/mig_instances.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

constexpr char kManaged[] = R"([
  {"currentAction": "NONE", "id": "35214149934130896",
   "instance": "https://www.googleapis.com/compute/v1/projects/p/zones/z/instances/slice-1-zq7x",
   "instanceStatus": "RUNNING", "name": "slice-1-zq7x"},
  {"currentAction": "NONE",
   "instance": "https://www.googleapis.com/compute/v1/projects/p/zones/z/instances/slice-1-a2bc",
   "instanceStatus": "RUNNING"}
])";

constexpr char kInstances[] = R"([
  {"name": "slice-1-a2bc", "status": "RUNNING",
   "selfLink": "https://www.googleapis.com/compute/v1/projects/my-proj/zones/z/instances/slice-1-a2bc",
   "networkInterfaces": [{"networkIP": "10.0.0.2", "accessConfigs": [{"natIP": "34.1.2.3"}]}],
   "metadata": {"items": [{"key": "agent-worker-number", "value": "0"}]}},
  {"name": "slice-1-zq7x", "status": "RUNNING",
   "networkInterfaces": [{"networkIP": "10.0.0.3"}],
   "metadata": {"items": [{"key": "tpu-env", "value": "ACCELERATOR_TYPE: 'v5p-16'\nWORKER_ID: '1'\n"}]}},
  {"name": "other-vm", "status": "RUNNING", "networkInterfaces": [{"networkIP": "10.0.0.9"}]}
])";

TEST(MigInstancesTest, ReadsTheGroupsInstancesAndTheirStates) {
  const auto instances = ParseManagedInstances(kManaged, "mig slice-1");
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_EQ(instances[0].name, "slice-1-zq7x");
  EXPECT_EQ(instances[1].name, "slice-1-a2bc");  // from the instance URL
  EXPECT_EQ(MigNotReady("slice-1", instances), "");
}

TEST(MigInstancesTest, AnInstanceNotRunningOrAGroupNotStableIsNamedWithItsState) {
  std::vector<ManagedInstance> instances = {{"slice-1-a", "RUNNING", "NONE"},
                                            {"slice-1-b", "STOPPING", "RECREATING"}};
  EXPECT_EQ(MigNotReady("slice-1", instances),
            "mig slice-1: instance slice-1-b is STOPPING (action RECREATING), not RUNNING");
  instances[1] = {"slice-1-b", "RUNNING", "VERIFYING"};
  EXPECT_EQ(MigNotReady("slice-1", instances),
            "mig slice-1 is not stable: instance slice-1-b is RUNNING but the group is "
            "VERIFYING it");
  EXPECT_EQ(MigNotReady("slice-1", {}), "mig slice-1 has no instances");
}

TEST(MigInstancesTest, ReadsAddressesAndWorkerNumbersInTheGroupsOrder) {
  std::string project;
  const auto workers =
      ParseMigInstances(kInstances, ParseManagedInstances(kManaged, "m"), "mig slice-1", &project);
  ASSERT_EQ(workers.size(), 2u);  // other-vm is not in the group
  EXPECT_EQ(workers[0].name, "slice-1-zq7x");
  EXPECT_EQ(workers[0].internal_ip, "10.0.0.3");
  EXPECT_FALSE(workers[0].external_ip);
  EXPECT_EQ(workers[0].tpu_worker_number, 1);  // tpu-env's WORKER_ID
  EXPECT_EQ(workers[1].internal_ip, "10.0.0.2");
  EXPECT_EQ(workers[1].external_ip, "34.1.2.3");
  EXPECT_EQ(workers[1].tpu_worker_number, 0);  // agent-worker-number
  EXPECT_EQ(project, "my-proj");
}

TEST(MigInstancesTest, AMissingInstanceOrABadAnswerIsAnError) {
  const std::vector<ManagedInstance> missing = {{"slice-1-nope", "RUNNING", "NONE"}};
  EXPECT_THROW(ParseMigInstances(kInstances, missing, "mig slice-1", nullptr), Error);
  EXPECT_THROW(ParseManagedInstances("{}", "mig slice-1"), Error);
  EXPECT_THROW(ParseManagedInstances("not json", "mig slice-1"), Error);
  EXPECT_THROW(ParseManagedInstances(R"([{"name": "-rf"}])", "mig slice-1"), Error);
  const std::vector<ManagedInstance> one = {{"a", "RUNNING", "NONE"}};
  EXPECT_THROW(ParseMigInstances(
                   R"([{"name": "a", "networkInterfaces": [{"networkIP": "-oProxyCommand=x"}]}])",
                   one, "mig slice-1", nullptr),
               Error);
}

TEST(MigInstancesTest, CommandLines) {
  const SliceRef mig{"slice-1", "us-central1-a", "my-proj"};
  const auto list = GcloudMigListInstancesCommand(mig);
  EXPECT_EQ(std::vector<std::string>(list.begin() + 1, list.end()),
            (std::vector<std::string>{"compute", "instance-groups", "managed", "list-instances",
                                      "slice-1", "--zone", "us-central1-a", "--project", "my-proj",
                                      "--format=json"}));
  const auto instances = GcloudMigInstancesCommand(mig, {"slice-1-a", "slice-1-b"});
  EXPECT_EQ(std::vector<std::string>(instances.begin() + 1, instances.end()),
            (std::vector<std::string>{"compute", "instances", "list", "--zones", "us-central1-a",
                                      "--project", "my-proj",
                                      "--filter=name=( slice-1-a slice-1-b )", "--format=json"}));
  EXPECT_THROW(GcloudMigInstancesCommand(mig, {"a )"}), Error);
  EXPECT_THROW(GcloudMigListInstancesCommand({"--x", "z", {}}), Error);
}

}  // namespace
}  // namespace podrun
