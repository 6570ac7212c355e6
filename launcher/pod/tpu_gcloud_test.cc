// Tests of provisioning's gcloud command lines (exactly what podrun runs; docs/gcloud-verified.md
// says which of them the real gcloud was seen to accept), the checks of create:, and reading a
// queued resource.
#include "launcher/pod/tpu_gcloud.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>

#include "launcher/base/error.h"

namespace podrun {
namespace {

std::string Join(const GcloudCommand& command) {
  std::string out;
  for (const std::string& a : command.argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

class TpuGcloudTest : public ::testing::Test {
 protected:
  void SetUp() override { ::unsetenv("PODRUN_GCLOUD"); }
  SliceRef node_{"node-1", "us-central2-b", std::nullopt};
  SliceRef in_project_{"node-1", "us-central2-b", std::string("my-proj")};
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
  EXPECT_EQ("/opt/g/gcloud", GcloudDeleteNodeCommand(node_).argv.front());
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

TEST_F(TpuGcloudTest, AStockoutIsToldFromAQuotaByGcloudsStatusNotByNames) {
  EXPECT_EQ(GcloudFailure::kStockout,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: "
                                "There is no more capacity in the zone \"us-central2-b\"; you "
                                "can try in another zone"));
  EXPECT_EQ(GcloudFailure::kStockout,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.create) {\n  \"code\": 8,\n"
                                "  \"message\": \"RESOURCE_EXHAUSTED\"\n}"));
  EXPECT_EQ(GcloudFailure::kQuota,
            ClassifyGcloudWords(
                "ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: Quota limit "
                "'TPUV4PodPerProjectPerZoneForTPUAPI' has been exceeded. Limit: 32 in zone "
                "us-central2-b."));
  EXPECT_EQ(GcloudFailure::kQuota,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: "
                                "Quota 'TPUV4sPreemptible' exhausted. Limit 32 in zone zone-a"));
  // A project, zone or node whose name holds "quota" changes nothing.
  EXPECT_EQ(GcloudFailure::kStockout,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.queued-resources.create) "
                                "RESOURCE_EXHAUSTED: Resource 'projects/quota-lab/locations/z/"
                                "queuedResources/quota' could not be provisioned in my-quota-lab"));
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.create) INVALID_ARGUMENT: "
                                "Invalid accelerator type v4-7 (RESOURCE_EXHAUSTED quota)."));
  EXPECT_EQ(GcloudFailure::kNotFound,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.describe) NOT_FOUND: "
                                "Resource 'projects/P/locations/Z/nodes/NAME' was not found."));
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.describe) PERMISSION_DENIED: "
                                "Resource 'projects/NOT_FOUND/locations/Z/nodes/N'"));
}

TEST_F(TpuGcloudTest, TheApisBadMinutesAreTransientAndRefusalsAreNot) {
  // gcloud 528's words for a 503 after its own retries (docs/gcloud-verified.md).
  const std::string http503 =
      "ERROR: (gcloud.compute.tpus.tpu-vm.describe) HttpError accessing "
      "<https://tpu.googleapis.com/v2/projects/p/locations/z/nodes/n?alt=json>: response: "
      "<{'content-type': 'application/json', 'status': 503}>, content <{\n  \"error\": {\n"
      "    \"code\": 503,\n    \"message\": \"The service is currently unavailable.\",\n"
      "    \"status\": \"UNAVAILABLE\"\n  }\n}\n}>\nThis may be due to network connectivity "
      "issues. Please check your network settings, and the status of the service you are "
      "trying to reach.";
  EXPECT_EQ(GcloudFailure::kTransient, ClassifyGcloudWords(http503));
  EXPECT_EQ("HTTP 503", GcloudFailureReason(http503));
  EXPECT_EQ(GcloudFailure::kTransient,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.describe) UNAVAILABLE: "
                                "The service is currently unavailable."));
  EXPECT_EQ("UNAVAILABLE", GcloudFailureReason("ERROR: (gcloud.compute.tpus.tpu-vm.describe) "
                                               "UNAVAILABLE: The service is unavailable."));
  EXPECT_EQ(GcloudFailure::kTransient,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.create) DEADLINE_EXCEEDED: "
                                "Deadline exceeded."));
  EXPECT_EQ(GcloudFailure::kTransient,
            ClassifyGcloudWords("ERROR: (gcloud.compute.instance-groups.managed.list-instances) "
                                "There was a problem refreshing your current auth tokens: "
                                "('Connection aborted.', RemoteDisconnected('Remote end closed "
                                "connection without response'))"));
  EXPECT_EQ(GcloudFailure::kTransient,
            ClassifyGcloudWords("ERROR: gcloud crashed (ConnectionError): HTTPSConnectionPool("
                                "host='tpu.googleapis.com', port=443): Max retries exceeded"));
  // A rate limit passes; a quota on chips does not.
  EXPECT_EQ(GcloudFailure::kTransient,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.describe) RESOURCE_EXHAUSTED: "
                                "Quota exceeded for quota metric 'Read requests' and limit "
                                "'Read requests per minute' of service 'tpu.googleapis.com'. "
                                "Requests per minute exceeded."));
  // Refusals stay what they are, and names never make a failure transient.
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.describe) PERMISSION_DENIED: "
                                "Permission 'tpu.nodes.get' denied on 'projects/unavailable-lab/"
                                "locations/z/nodes/connection refused'"));
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords("ERROR: (gcloud.compute.tpus.tpu-vm.create) INVALID_ARGUMENT: "
                                "Invalid accelerator type v4-7."));
  EXPECT_TRUE(IsTransientGcloudFailure(GcloudFailure::kTimedOut));
  EXPECT_FALSE(IsTransientGcloudFailure(GcloudFailure::kQuota));
}

// A stand-in gcloud: a shell script at a path of this test's.
std::string FakeGcloud(const std::string& name, const std::string& body) {
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "#!/bin/sh\n%s\n", body.c_str());
  std::fclose(f);
  ::chmod(path.c_str(), 0700);
  return path;
}

TEST_F(TpuGcloudTest, AHungGcloudIsStoppedAtItsDeadlineAndSaidSo) {
  ::setenv("PODRUN_GCLOUD", FakeGcloud("hung-gcloud", "echo asking >&2; exec sleep 60").c_str(), 1);
  ::setenv("PODRUN_GCLOUD_TIMEOUT_SECONDS", "1", 1);
  const auto began = std::chrono::steady_clock::now();
  try {
    FindTpuNode(in_project_);
    ADD_FAILURE() << "a hung gcloud was waited for";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kTimedOut, e.failure());
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("did not end within 1 s: podrun "
                                                            "stopped it"))
        << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find("asking")) << e.what();
  }
  // 1 s, then SIGTERM ends sleep at once: well under the 2 s grace on a loaded machine.
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(8));
  ::unsetenv("PODRUN_GCLOUD_TIMEOUT_SECONDS");
}

// The deadlines come with the command from its builder: a blocking delete may take long, a
// describe may not, whatever the node is called.
TEST_F(TpuGcloudTest, EachCommandComesWithItsDeadline) {
  EXPECT_EQ(std::chrono::minutes(2), GcloudDescribeQueuedCommand(node_).deadline);
  EXPECT_EQ(std::chrono::minutes(2), GcloudGuestAttributesCommand(node_).deadline);
  EXPECT_EQ(std::chrono::minutes(5),
            GcloudCreateNodeCommand(node_, {.accelerator_type = "v4-8", .version = "v"}).deadline);
  EXPECT_EQ(
      std::chrono::minutes(5),
      GcloudCreateQueuedCommand(node_, {.accelerator_type = "v4-8", .version = "v"}).deadline);
  EXPECT_EQ(std::chrono::minutes(30), GcloudDeleteQueuedCommand(node_).deadline);
  EXPECT_EQ(std::chrono::minutes(30), GcloudDeleteNodeCommand(node_).deadline);
  // A node named `delete` or `create` is asked about within a describe's deadline.
  EXPECT_EQ(std::chrono::minutes(2),
            GcloudDescribeQueuedCommand({"delete", "us-central2-b", std::nullopt}).deadline);
  EXPECT_EQ(std::chrono::minutes(2),
            GcloudGuestAttributesCommand({"create", "us-central2-b", std::nullopt}).deadline);
  // The command runs within the deadline it came with.
  ::unsetenv("PODRUN_GCLOUD_TIMEOUT_SECONDS");
  ::setenv("PODRUN_GCLOUD", FakeGcloud("slow-gcloud", "exec sleep 60").c_str(), 1);
  const auto began = std::chrono::steady_clock::now();
  try {
    RunGcloud(GcloudCommand{{GcloudProgram(), "compute", "tpus", "tpu-vm", "delete", "n"},
                            std::chrono::seconds(1)},
              "tpu n");
    ADD_FAILURE() << "the command's deadline was not kept";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kTimedOut, e.failure());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("did not end within 1 s")) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(8));
}

// A failed operation's code is its JSON field, read whole: 503 (or 50) is not 5 (NOT_FOUND),
// 80 is not 8 (RESOURCE_EXHAUSTED).
TEST_F(TpuGcloudTest, AFailedOperationsCodeIsReadAsAFieldNotAsText) {
  auto operation = [](const std::string& code, const std::string& message) {
    return "Waiting for operation [op-1] to complete...failed.\nERROR: "
           "(gcloud.compute.tpus.tpu-vm.create) {\n  \"code\": " +
           code + ",\n  \"message\": \"" + message + "\"\n}\n";
  };
  EXPECT_EQ(GcloudFailure::kNotFound, ClassifyGcloudWords(operation("5", "node gone")));
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords(operation("503", "The service is currently unavailable.")));
  EXPECT_EQ(GcloudFailure::kFailed, ClassifyGcloudWords(operation("50", "x")));
  EXPECT_EQ(GcloudFailure::kFailed, ClassifyGcloudWords(operation("80", "x")));
  EXPECT_EQ(GcloudFailure::kStockout, ClassifyGcloudWords(operation("8", "RESOURCE_EXHAUSTED")));
  EXPECT_EQ(GcloudFailure::kQuota,
            ClassifyGcloudWords(operation("8", "Quota 'TPUV4sPreemptible' exhausted.")));
  // A message that holds the words is not the field (13, INTERNAL: the API's bad minute).
  EXPECT_EQ(GcloudFailure::kTransient,
            ClassifyGcloudWords(operation("13", "internal: \\\"code\\\": 5")));
  EXPECT_EQ(GcloudFailure::kFailed,
            ClassifyGcloudWords(operation("9", "precondition: \\\"code\\\": 5")));
}

TEST_F(TpuGcloudTest, NotFoundIsReadOnceFromGcloudsStatus) {
  ::setenv("PODRUN_GCLOUD",
           FakeGcloud("missing-gcloud",
                      "echo \"ERROR: (gcloud.compute.tpus.tpu-vm.describe) NOT_FOUND: Resource "
                      "'projects/p/locations/z/nodes/node-1' was not found\" >&2; exit 1")
               .c_str(),
           1);
  EXPECT_FALSE(FindTpuNode(in_project_));
  // A node named after the status is no reason to think it missing.
  ::setenv("PODRUN_GCLOUD",
           FakeGcloud("denied-gcloud",
                      "echo \"ERROR: (gcloud.compute.tpus.tpu-vm.describe) PERMISSION_DENIED: "
                      "on NOT_FOUND\" >&2; exit 1")
               .c_str(),
           1);
  try {
    FindTpuNode(in_project_);
    ADD_FAILURE() << "PERMISSION_DENIED taken for NOT_FOUND";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kFailed, e.failure());
  }
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
