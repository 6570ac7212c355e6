// Integration tests of Cloud TPU discovery (`--tpu`, docs/reference.md "Discovery") against a real
// 4-worker testpod, with a stand-in for the gcloud CLI ($PODRUN_GCLOUD: a script that answers
// `describe` with the Node JSON the test wrote, or gcloud's own NOT_FOUND error). What is
// checked: the exact command line podrun runs, endpoints in order as workers, external
// addresses to connect to and internal ones for the workers (or --internal-ip), a node that is
// not READY refused naming its state, gcloud's error shown, the answer cached (--refresh asks
// again), and two nodes as one multislice job with the MEGASCALE variables on every worker.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 18;

std::string Dir() { return ::testing::TempDir() + "/podrun-discovery-test"; }
std::string Home() { return Dir() + "/home"; }

class DiscoveryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Dir());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
    // The gcloud stand-in: logs its argv, answers from <name>.json or fails as gcloud does.
    std::ofstream(Gcloud())
        << "#!/bin/sh\n"
           "echo \"$*\" >> " +
               Dir() +
               "/calls\n"
               "f=" +
               Dir() +
               "/$5.json\n"
               "if [ -f \"$f\" ]; then cat \"$f\"; exit 0; fi\n"
               "echo \"ERROR: (gcloud.compute.tpus.tpu-vm.describe) NOT_FOUND: "
               "Resource 'projects/p/locations/$7/nodes/$5' was not found\" >&2\n"
               "exit 1\n";
    std::filesystem::permissions(Gcloud(), std::filesystem::perms::owner_all);
    // node-a: w0, w1; node-b: w2, w3. External IPs are the addresses this host reaches; the
    // internal "IPs" are the workers' names, which the workers (and the pod's ssh_config) know.
    WriteNode("node-a", "READY", {0, 1});
    WriteNode("node-b", "READY", {2, 3});
    WriteNode("node-c", "CREATING", {});
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static std::string Gcloud() { return Dir() + "/gcloud"; }
  static void WriteNode(const std::string& name, const std::string& state,
                        const std::vector<int>& workers) {
    std::string endpoints;
    for (int i : workers) {
      if (!endpoints.empty()) endpoints += ",";
      endpoints += R"({"ipAddress": ")" + pod_->name(i) + R"(", "port": 8470, "accessConfig": )" +
                   R"({"externalIp": ")" + pod_->address(i) + R"("}})";
    }
    std::ofstream(Dir() + "/" + name + ".json")
        << R"({"name": "projects/p/locations/zone-1/nodes/)" << name << R"(", "state": ")" << state
        << R"(", "acceleratorType": "v4-16")"
        << (workers.empty() ? "" : R"(, "networkEndpoints": [)" + endpoints + "]") << "}";
  }
  static std::string Podrun() {
    return "env PODRUN_HOME=" + Home() + " PODRUN_GCLOUD=" + Gcloud() + " " +
           std::string(PODRUN_BINARY);
  }
  static std::string Keys() {
    return " -i " + pod_->identity() + " --known-hosts " + pod_->known_hosts();
  }
  // The describes gcloud was asked for (a command may also ask `config config-helper` once,
  // for the reads it then makes through the API: this stand-in refuses it, as a gcloud without
  // credentials does, and podrun then asks gcloud to describe).
  static int Calls() {
    return std::stoi(
        RunCommand("grep -c 'tpu-vm describe' " + Dir() + "/calls 2>/dev/null").output);
  }
  static int AllCalls() {
    return std::stoi(RunCommand("cat " + Dir() + "/calls 2>/dev/null | wc -l").output);
  }
  static int HelperCalls() {
    return std::stoi(
        RunCommand("grep -c 'config config-helper' " + Dir() + "/calls 2>/dev/null").output);
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> DiscoveryTest::pod_;

TEST_F(DiscoveryTest, EndpointsAreWorkersReachedAtTheirExternalAddresses) {
  CommandResult r = RunCommand(Podrun() + " exec --tpu node-a --zone zone-1 --project my-proj" +
                               Keys() + " -- 'echo $(hostname)'");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] w0")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] w1")) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("[w2]")) << r.output;
  // The exact command line gcloud got.
  EXPECT_NE(std::string::npos,
            ReadTextFile(Dir() + "/calls")
                .find("compute tpus tpu-vm describe node-a --zone zone-1 --project my-proj "
                      "--format=json"));
  // Cached: the next command asks gcloud nothing; --refresh asks again.
  const int calls = Calls();
  ASSERT_EQ(0, RunCommand(Podrun() + " exec --tpu node-a --zone zone-1 --project my-proj" + Keys() +
                          " -- true")
                   .exit_code);
  EXPECT_EQ(calls, Calls());
  const int helper = HelperCalls();
  ASSERT_EQ(0,
            RunCommand(Podrun() + " exec --tpu node-a --zone zone-1 --project my-proj --refresh" +
                       Keys() + " -- true")
                .exit_code);
  EXPECT_EQ(calls + 1, Calls());
  EXPECT_EQ(helper + 1, HelperCalls());  // once per process, refused: not asked again
}

TEST_F(DiscoveryTest, ACachedAddressThatNoLongerAnswersMakesPodrunAskGcloudAgain) {
  WriteNode("node-m", "READY", {0, 1});
  const std::string exec =
      Podrun() + " exec --tpu node-m --zone zone-1" + Keys() + " -- 'echo $(hostname)'";
  ASSERT_EQ(0, RunCommand(exec).exit_code);  // cached now: w0 at w0's address
  const int calls = Calls();
  // The node was recreated: its worker 0 is another VM (w2's address); the old one is gone.
  WriteNode("node-m", "READY", {2, 1});
  pod_->Cut(0);
  CommandResult r = RunCommand(exec);
  pod_->Heal(0);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("no answer at the cached address of w0 (" +
                                             pod_->address(0) + "): asking gcloud again"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] w2")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] w1")) << r.output;
  EXPECT_EQ(calls + 1, Calls());
}

TEST_F(DiscoveryTest, InternalIpConnectsToTheInternalAddresses) {
  // The internal "IPs" (w0, w1) resolve through the pod's ssh_config only.
  CommandResult r = RunCommand(Podrun() + " exec --tpu node-a --zone zone-1 --internal-ip -F " +
                               pod_->ssh_config() + Keys() + " -- 'echo $(hostname)'");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] w1")) << r.output;
}

TEST_F(DiscoveryTest, ANodeThatIsNotReadyOrUnknownIsRefusedWithTheReason) {
  CommandResult creating =
      RunCommand(Podrun() + " exec --tpu node-c --zone zone-1" + Keys() + " -- true");
  EXPECT_EQ(3, creating.exit_code) << creating.output;
  EXPECT_NE(std::string::npos, creating.output.find("tpu node-c is CREATING, not READY"))
      << creating.output;
  CommandResult unknown =
      RunCommand(Podrun() + " exec --tpu node-x --zone zone-1" + Keys() + " -- true");
  EXPECT_EQ(3, unknown.exit_code) << unknown.output;
  EXPECT_NE(std::string::npos,
            unknown.output.find("NOT_FOUND: Resource 'projects/p/locations/zone-1/nodes/node-x' "
                                "was not found"))
      << unknown.output;
  CommandResult no_zone = RunCommand(Podrun() + " exec --tpu node-a" + Keys() + " -- true");
  EXPECT_EQ(2, no_zone.exit_code) << no_zone.output;
}

TEST_F(DiscoveryTest, TwoNodesRunAsOneMultisliceJob) {
  const std::string spec = Dir() + "/multislice.yaml";
  std::ofstream(spec) << "name: multislice\nmegascale_port: 8090\npod:\n  tpu: node-a,node-b\n"
                         "  zone: zone-1\nrun: |\n"
                         "  echo \"env $PODRUN_WORKER_ID/$PODRUN_NUM_WORKERS $PODRUN_WORKER_HOSTS "
                         "${TPU_WORKER_ID:-unset} $MEGASCALE_SLICE_ID/$MEGASCALE_NUM_SLICES "
                         "$MEGASCALE_COORDINATOR_ADDRESS $MEGASCALE_PORT $JAX_PROCESS_ID\"\n";
  CommandResult r = RunCommand(Podrun() + " launch " + spec + Keys());
  ASSERT_EQ(0, r.exit_code) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    const std::string expected = "[w" + std::to_string(i) + "] env " + std::to_string(i) +
                                 "/4 w0,w1,w2,w3 unset " + std::to_string(i / 2) +
                                 "/2 w0:8090 8090 " + std::to_string(i);
    EXPECT_NE(std::string::npos, r.output.find(expected)) << expected << "\n" << r.output;
  }
  // The job record keeps the resolved pod: status needs no gcloud.
  const int calls = AllCalls();
  CommandResult status = RunCommand(Podrun() + " status multislice");
  EXPECT_EQ(0, status.exit_code) << status.output;
  EXPECT_NE(std::string::npos, status.output.find(pod_->address(3))) << status.output;
  EXPECT_EQ(calls, AllCalls());
}

TEST_F(DiscoveryTest, AWorkerLostWhileItsNodeIsPreemptedIsNamedPreempted) {
  const std::string marker = "podrun-test-preempted-" + std::to_string(::getpid());
  const std::string spec = Dir() + "/preempted.yaml";
  std::ofstream(spec) << "name: preempted\npod:\n  tpu: node-a\n  zone: zone-1\nrun: exec -a "
                      << marker << " sleep 300\n";
  auto running = [&] {
    return std::atoi(RunCommand("pgrep -fc '^" + marker + " ' || true").output.c_str());
  };
  CommandResult r;
  // Short keepalives: the cut-off worker is found lost in seconds, not in minutes.
  std::thread launch([&] {
    r = RunCommand("env PODRUN_SSH_KEEPALIVE_SECONDS=2 " + Podrun() + " launch " + spec + Keys());
  });
  for (int i = 0; i < 600 && running() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(2, running());
  // The node is preempted: gcloud says so, and w1 drops off the network.
  WriteNode("node-a", "PREEMPTED", {0, 1});
  pod_->Cut(1);
  launch.join();
  pod_->Heal(1);
  WriteNode("node-a", "READY", {0, 1});
  EXPECT_EQ(1, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("preempted: TPU node node-a is PREEMPTED (gcloud)"))
      << r.output;
  // The job record says so, and the stop the cut-off worker missed reaches it now.
  CommandResult status = RunCommand(Podrun() + " status preempted");
  EXPECT_NE(std::string::npos, status.output.find("PREEMPTED")) << status.output;
  for (int i = 0; i < 100 && running() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(0, running());
}

TEST_F(DiscoveryTest, ARestartWaitsForThePreemptedNodeAndRunsAtItsNewAddresses) {
  const std::string marker = "podrun-test-restart-wait-" + std::to_string(::getpid());
  const std::string flag = "/tmp/podrun-test-preempt-flag";  // in w1's own /tmp
  ASSERT_EQ(0, pod_->Exec(1, "rm -f " + flag).exit_code);
  WriteNode("node-p", "READY", {0, 1});
  const std::string spec = Dir() + "/restart-wait.yaml";
  std::ofstream(spec) << "name: restart-wait\nrestarts: 1\npod:\n  tpu: node-p\n  zone: zone-1\n"
                         "run: |\n"
                         "  if [ \"$PODRUN_ATTEMPT\" = 1 ]; then\n"
                         "    if [ \"$PODRUN_WORKER_ID\" = 1 ]; then\n"
                         "      while [ ! -e "
                      << flag
                      << " ]; do sleep 0.1; done; exit 7\n"
                         "    fi\n"
                         "    exec -a "
                      << marker
                      << " sleep 300\n"
                         "  fi\n"
                         "  echo \"attempt $PODRUN_ATTEMPT on $(hostname)\"\n";
  auto running = [&] {
    return std::atoi(RunCommand("pgrep -fc '^" + marker + " ' || true").output.c_str());
  };
  CommandResult r;
  std::thread launch([&] {
    r = RunCommand("env PODRUN_TPU_POLL_SECONDS=1 " + Podrun() + " launch " + spec + Keys());
  });
  for (int i = 0; i < 600 && running() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(1, running());
  // The node is preempted and w1's process fails; the restart must wait for the node, which
  // comes back as other VMs (w2 and w3's addresses) once gcloud was asked twice more.
  const int calls = Calls();
  WriteNode("node-p", "PREEMPTED", {0, 1});
  ASSERT_EQ(0, pod_->Exec(1, "touch " + flag).exit_code);
  for (int i = 0; i < 600 && Calls() < calls + 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(Calls(), calls + 2);
  WriteNode("node-p", "READY", {2, 3});
  launch.join();
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("waiting for the pod to be READY again: TPU node "
                                             "node-p is PREEMPTED"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("READY again, at new addresses")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] attempt 2 on w2")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] attempt 2 on w3")) << r.output;
  // The job record has the new addresses.
  CommandResult status = RunCommand(Podrun() + " status restart-wait");
  EXPECT_EQ(0, status.exit_code) << status.output;
  EXPECT_NE(std::string::npos, status.output.find(pod_->address(3))) << status.output;
  EXPECT_EQ(0, running());
  pod_->Exec(1, "rm -f " + flag);
}

// TPU VMs given by --hosts: each agent asks its VM's metadata server (here a real HTTP server at
// 169.254.169.254:80 in each worker's network namespace) for its TPU worker number.
TEST(TpuIdentityTest, AHostOrderThatContradictsTheTpuRuntimeIsRefused) {
  constexpr int kIdentityPodId = 20;
  TestPod pod(3, kIdentityPodId);
  // The VMs' TPU worker numbers: w0 is 0, w1 is 2, w2 is 1.
  const int numbers[3] = {0, 2, 1};
  for (int i = 0; i < 3; ++i) {
    CommandResult up = pod.StartMetadataServer(i, numbers[i]);
    ASSERT_EQ(0, up.exit_code) << up.output;
    ASSERT_EQ(std::to_string(numbers[i]), up.output);
  }
  const std::string spec = Dir() + "/identity.yaml";
  std::ofstream(spec)
      << "name: identity\nrun: echo \"rank $PODRUN_WORKER_ID tpu ${TPU_WORKER_ID:-unset}\"\n";
  const std::string podrun = "env PODRUN_HOME=" + Dir() + "/home-identity " +
                             std::string(PODRUN_BINARY) + " launch " + spec + " -i " +
                             pod.identity() + " --known-hosts " + pod.known_hosts();
  // In the pod's order: w1 and w2 are the wrong way round.
  CommandResult wrong = RunCommand(podrun + " --hosts " + pod.hosts()[0] + "," + pod.hosts()[1] +
                                   "," + pod.hosts()[2]);
  EXPECT_EQ(2, wrong.exit_code) << wrong.output;
  EXPECT_NE(std::string::npos, wrong.output.find("w1 (" + pod.hosts()[1] + ") is TPU worker 2"))
      << wrong.output;
  EXPECT_NE(std::string::npos, wrong.output.find("w2 (" + pod.hosts()[2] + ") is TPU worker 1"))
      << wrong.output;
  // In TPU worker order: it runs, and TPU_WORKER_ID is the runtime's, not podrun's.
  CommandResult right = RunCommand(podrun + " --hosts " + pod.hosts()[0] + "," + pod.hosts()[2] +
                                   "," + pod.hosts()[1]);
  EXPECT_EQ(0, right.exit_code) << right.output;
  EXPECT_NE(std::string::npos, right.output.find("[w1] rank 1 tpu unset")) << right.output;
  RunCommand("pkill -f '[p]odrun-test-metadata.py' || true");
}

}  // namespace
}  // namespace podrun::testing
