// Tests of provisioning's gcloud command lines (exactly what podrun runs; docs/gcloud-verified.md
// says which of them the real gcloud was seen to accept), the checks of create:, and reading a
// queued resource.
#include "launcher/pod/tpu_gcloud.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

std::string Join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

class TpuGcloudTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("PODRUN_GCLOUD"); }
  TpuQuery node_{"node-1", "us-central2-b", std::nullopt};
  TpuQuery in_project_{"node-1", "us-central2-b", std::string("my-proj")};
};

TEST_F(TpuGcloudTest, CreateCommandLines) {
  TpuCreate spot{.accelerator_type = "v4-32", .version = "tpu-ubuntu2204-base", .spot = true};
  EXPECT_EQ(
      "gcloud compute tpus tpu-vm create node-1 --zone us-central2-b --accelerator-type v4-32 "
      "--version tpu-ubuntu2204-base --spot --async --quiet",
      Join(GcloudCreateNodeCommand(node_, spot)));
  TpuCreate preemptible{.accelerator_type = "v2-8", .version = "v", .preemptible = true};
  EXPECT_EQ(
      "gcloud compute tpus tpu-vm create node-1 --zone us-central2-b --project my-proj "
      "--accelerator-type v2-8 --version v --preemptible --async --quiet",
      Join(GcloudCreateNodeCommand(in_project_, preemptible)));
  TpuCreate queued = spot;
  queued.queued = true;
  queued.valid_until = "6h";
  EXPECT_EQ(
      "gcloud compute tpus queued-resources create node-1 --node-id node-1 --zone us-central2-b "
      "--accelerator-type v4-32 --runtime-version tpu-ubuntu2204-base --spot "
      "--valid-until-duration 6h --async --quiet",
      Join(GcloudCreateQueuedCommand(node_, queued)));
}

TEST_F(TpuGcloudTest, DeleteAndDescribeCommandLines) {
  EXPECT_EQ(
      "gcloud compute tpus tpu-vm delete node-1 --zone us-central2-b --project my-proj --quiet",
      Join(GcloudDeleteNodeCommand(in_project_)));
  EXPECT_EQ(
      "gcloud compute tpus queued-resources delete node-1 --zone us-central2-b --force --quiet",
      Join(GcloudDeleteQueuedCommand(node_)));
  EXPECT_EQ(
      "gcloud compute tpus queued-resources describe node-1 --zone us-central2-b --format=json",
      Join(GcloudDescribeQueuedCommand(node_)));
  ::setenv("PODRUN_GCLOUD", "/opt/g/gcloud", 1);
  EXPECT_EQ("/opt/g/gcloud", GcloudDeleteNodeCommand(node_).front());
  ::unsetenv("PODRUN_GCLOUD");
}

TEST_F(TpuGcloudTest, CreateProblems) {
  TpuCreate ok{.accelerator_type = "v4-32", .version = "tpu-ubuntu2204-base"};
  EXPECT_EQ("", TpuCreateProblem(ok));
  auto problem = [&](auto change) {
    TpuCreate c = ok;
    change(c);
    return TpuCreateProblem(c);
  };
  EXPECT_NE("", problem([](TpuCreate& c) { c.accelerator_type = ""; }));
  EXPECT_NE("", problem([](TpuCreate& c) { c.accelerator_type = "v4-32 --project x"; }));
  EXPECT_NE("", problem([](TpuCreate& c) { c.version = "-rf"; }));
  EXPECT_EQ("spot and preemptible exclude each other: choose one",
            problem([](TpuCreate& c) { c.spot = c.preemptible = true; }));
  EXPECT_NE("", problem([](TpuCreate& c) { c.queued = c.preemptible = true; }));
  EXPECT_NE("", problem([](TpuCreate& c) { c.valid_until = "6h"; }));
  EXPECT_NE("", problem([](TpuCreate& c) {
              c.queued = true;
              c.valid_until = "6 hours";
            }));
  EXPECT_EQ("", problem([](TpuCreate& c) {
              c.queued = true;
              c.valid_until = "2d";
            }));
}

TEST_F(TpuGcloudTest, ReadsAQueuedResourceAndTheNodeItMade) {
  QueuedResource qr = ParseQueuedResource(
      R"({"name": "projects/p/locations/z/queuedResources/node-1",
          "state": {"state": "WAITING_FOR_RESOURCES"}, "spot": {}})",
      "queued resource node-1");
  EXPECT_EQ("node-1", qr.name);
  EXPECT_EQ("WAITING_FOR_RESOURCES", qr.state);
  EXPECT_THROW(ParseQueuedResource(R"({"name": "x"})", "qr"), Error);
  EXPECT_THROW(ParseQueuedResource("not json", "qr"), Error);
  TpuNode node = ParseTpuNode(
      R"({"name": "projects/p/locations/z/nodes/node-1", "state": "CREATING",
          "acceleratorType": "v4-16", "runtimeVersion": "tpu-ubuntu2204-base",
          "queuedResource": "projects/p/locations/z/queuedResources/node-1"})",
      "tpu node-1");
  EXPECT_EQ("tpu-ubuntu2204-base", node.runtime_version);
  EXPECT_EQ("node-1", node.queued_resource);
}

TEST_F(TpuGcloudTest, GuestAttributesCommandLine) {
  EXPECT_EQ(
      "gcloud compute tpus tpu-vm get-guest-attributes node-1 --zone us-central2-b --project "
      "my-proj --format=json",
      Join(GcloudGuestAttributesCommand(in_project_)));
}

TEST_F(TpuGcloudTest, AStockoutIsToldFromAQuota) {
  EXPECT_TRUE(IsCapacityRefusal(
      "ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: There is no more capacity "
      "in the zone \"us-central2-b\"; you can try in another zone"));
  EXPECT_TRUE(IsCapacityRefusal("{\"code\": 8, \"message\": \"RESOURCE_EXHAUSTED\"}"));
  EXPECT_FALSE(IsCapacityRefusal(
      "ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: Quota limit "
      "'TPUV4PodPerProjectPerZoneForTPUAPI' has been exceeded. Limit: 32 in zone us-central2-b."));
  EXPECT_FALSE(IsCapacityRefusal("INVALID_ARGUMENT: Invalid accelerator type v4-7."));
}

TEST_F(TpuGcloudTest, CapacityWaitTakesADurationOrZero) {
  EXPECT_EQ(std::chrono::hours(6), ParseTpuDuration("6h"));
  EXPECT_EQ(std::chrono::seconds(90), ParseTpuDuration("90s"));
  EXPECT_EQ(std::chrono::days(2), ParseTpuDuration("2d"));
  EXPECT_EQ(std::chrono::seconds(0), ParseTpuDuration("0"));
  EXPECT_FALSE(ParseTpuDuration("6 hours"));
  EXPECT_FALSE(ParseTpuDuration("-1h"));
  EXPECT_FALSE(ParseTpuDuration("99999d"));
  TpuCreate c{.accelerator_type = "v4-8", .version = "v"};
  EXPECT_EQ(kDefaultCapacityWait, CapacityWaitOf(c));
  c.capacity_wait = "30m";
  EXPECT_EQ("", TpuCreateProblem(c));
  EXPECT_EQ(std::chrono::minutes(30), CapacityWaitOf(c));
  c.capacity_wait = "soon";
  EXPECT_NE(std::string::npos, TpuCreateProblem(c).find("bad capacity_wait 'soon'"));
}

}  // namespace
}  // namespace podrun
