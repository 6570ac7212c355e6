// Integration tests of spot TPUs that heal themselves (docs/reference.md, "Provisioning and
// recovery") on a real 4-worker testpod, through tests/fake-gcloud: the gcloud CLI face of
// scripts/fake-tpu-api, whose nodes take workers from the pod (a v4-16 node: 2 of the 4, so that
// a recreated node comes back at other addresses). A preemption here is real on the workers: the
// node reads PREEMPTED, every process on its workers is killed (TestPod::Reboot) and their homes
// are wiped (all but ~/.ssh, which a real TPU VM gets again from its metadata).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 29;

std::string Dir() { return ::testing::TempDir() + "/podrun-spot-test"; }
std::string Home() { return Dir() + "/home"; }
std::string State() { return Dir() + "/gcloud"; }
// Shared by every worker (each has its own /tmp and home, not /var/tmp): the checkpoints.
std::string Shared() { return "/var/tmp/podrun-spot-test-" + std::to_string(::getpid()); }

class SpotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir() + " " + Shared());
    std::filesystem::create_directories(State());
    std::filesystem::create_directories(Shared());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() {
    KillKeepers();
    pod_.reset();
    RunCommand("rm -rf " + Shared());
  }
  // Each test starts with no keeper of an earlier one and an empty pool: every node deleted.
  void SetUp() override {
    WriteConfig("");
    KillKeepers();
    for (const std::string zone : {"zone-a", "zone-b"}) {  // zone-b: a fallback zone
      nlohmann::json nodes = nlohmann::json::parse(
          Gcloud("compute tpus tpu-vm list --zone " + zone + " --format=json"), nullptr, false);
      if (!nodes.is_array()) continue;
      for (const auto& node : nodes) {
        const std::string name = node.value("name", "");
        Gcloud("compute tpus tpu-vm delete " + name.substr(name.rfind('/') + 1) + " --zone " +
               zone + " --quiet");
      }
    }
  }

  // The stand-in's settings: the pod's workers as its pool, 1 s to create a node, each worker's
  // real host key published as its guest attribute; `extra` over that.
  static void WriteConfig(const std::string& create_error, const nlohmann::json& extra = {}) {
    nlohmann::json config = {{"project", "fake-project"},
                             {"create_seconds", 1},
                             {"queue_seconds", 2},
                             {"delete_seconds", 0.2},
                             {"host_keys_dir", pod_->dir()}};
    for (int i = 0; i < kWorkers; ++i) config["pool"].push_back(pod_->address(i));
    if (!create_error.empty()) config["create_error"] = create_error;
    if (!extra.is_null()) config.update(extra);
    std::ofstream(State() + "/config.json") << config.dump();
  }
  static std::string Env() {
    // CLOUDSDK_CONFIG too: the keepers' environment is an allow-list (keeper_env.h).
    return "env PODRUN_HOME=" + Home() + " FAKE_GCLOUD_STATE=" + State() +
           " CLOUDSDK_CONFIG=" + State() + " PODRUN_GCLOUD=" + std::string(PODRUN_SOURCE_DIR) +
           "/tests/fake-gcloud PODRUN_TPU_POLL_SECONDS=1 ";
  }
  static std::string Podrun() { return Env() + PODRUN_BINARY; }
  static std::string Gcloud(const std::string& args) {
    return RunCommand(Env() + PODRUN_SOURCE_DIR + "/tests/fake-gcloud " + args).output;
  }
  // A spec on TPU node `node`, created by podrun (`create` is the create: mapping's inside).
  static std::string WriteSpec(const std::string& name, const std::string& node,
                               const std::string& create, const std::string& rest,
                               const std::string& known_hosts = "") {
    const std::string path = Dir() + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\npod:\n  tpu: " << node
                        << "\n  zone: zone-a\n  user: root\n  identity: " << pod_->identity()
                        << "\n  known_hosts: "
                        << (known_hosts.empty() ? pod_->known_hosts() : known_hosts)
                        << "\n  create: {" << create << "}\n"
                        << rest;
    return path;
  }
  // What a preemption does: the node reads PREEMPTED, its workers lose every process and the
  // contents of their homes, and come back as new VMs: with new host keys.
  static void Preempt(const std::string& node, const std::string& zone = "zone-a") {
    std::istringstream addresses(Gcloud("--admin preempt " + node + " --zone " + zone));
    for (std::string address; std::getline(addresses, address);) {
      for (int i = 0; i < kWorkers; ++i) {
        if (pod_->address(i) != address) continue;
        const std::string key = pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key";
        RunCommand("rm -f " + key + " " + key + ".pub && ssh-keygen -q -t ed25519 -N '' -f " + key +
                   " < /dev/null");
        pod_->Reboot(i);  // its sshd starts again with the new key
        pod_->Exec(i, "find ~ -mindepth 1 -maxdepth 1 ! -name .ssh -exec rm -rf {} +");
      }
    }
  }
  static nlohmann::json Status(const std::string& job) {
    CommandResult r = RunCommand(Podrun() + " status " + job + " --json", false);
    try {
      return nlohmann::json::parse(r.output);
    } catch (const nlohmann::json::exception&) {
      return {};
    }
  }
  static std::string JobId(const std::string& output) {
    std::smatch m;
    return std::regex_search(output, m, std::regex("job: (\\S+)")) ? m[1].str() : "";
  }
  // How many create commands a calls.log holds.
  static int Creates(const std::string& calls) {
    int n = 0;
    for (size_t at = calls.find("\"create\""); at != std::string::npos;
         at = calls.find("\"create\"", at + 1)) {
      ++n;
    }
    return n;
  }
  // The keepers of job `job` (or of every job of this test's): processes of this test's own
  // PODRUN_HOME, never another test's keepers elsewhere on the machine.
  static std::vector<pid_t> Keepers(const std::string& job = "") {
    return PodrunProcesses("podrun watch " + (job.empty() ? "" : job + " "), Home());
  }
  // Ends the keepers of this test's jobs (and only those).
  static void KillKeepers() {
    for (pid_t keeper : Keepers()) ::kill(keeper, SIGTERM);
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> SpotTest::pod_;

TEST_F(SpotTest, UpCreatesThroughTheQueueDownDeletesItAndUpAgainChangesNothing) {
  const std::string known_hosts = Dir() + "/up_known_hosts";
  RunCommand("rm -f " + known_hosts);
  const std::string up = Podrun() +
                         " up --tpu node-up --zone zone-a --accelerator-type v4-16 --version base "
                         "--spot --queued -y --known-hosts " +
                         known_hosts;
  CommandResult r = RunCommand(up);
  ASSERT_EQ(0, r.exit_code) << r.output;
  // The queue's states are said while they last (WAITING_FOR_RESOURCES may be over before the
  // first poll of a loaded machine: then PROVISIONING is the first said).
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex(R"(node-up \(zone zone-a\): (WAITING_FOR_RESOURCES|PROVISIONING))")))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("is READY: 2 workers")) << r.output;
  // `up` pins the keys its new VMs publish, as a launch does.
  EXPECT_NE(std::string::npos, r.output.find("pinned the host keys its 2 of 2 workers publish"))
      << r.output;
  const std::string pinned = ReadTextFile(known_hosts);
  EXPECT_EQ(2, std::count(pinned.begin(), pinned.end(), '\n')) << pinned;
  const std::string calls = ReadTextFile(State() + "/calls.log");
  EXPECT_NE(std::string::npos,
            calls.find(R"(["compute", "tpus", "queued-resources", "create", "node-up", )"
                       R"("--node-id", "node-up", "--zone", "zone-a", "--accelerator-type", )"
                       R"("v4-16", "--runtime-version", "base", "--spot", "--async", "--quiet"])"))
      << calls;
  // Up again: the READY node is used as it is; nothing is created.
  r = RunCommand(up);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("it existed: used as it is")) << r.output;
  EXPECT_EQ(Creates(calls), Creates(ReadTextFile(State() + "/calls.log")));
  // A preempted node is created again by up (it never comes back by itself).
  Gcloud("--admin preempt node-up --zone zone-a");
  r = RunCommand(up);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("is PREEMPTED: deleting it and creating it again"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("is READY: 2 workers")) << r.output;
  // Another type for the same name is named, never replaced.
  r = RunCommand(Podrun() +
                 " up --tpu node-up --zone zone-a --accelerator-type v4-32 --version "
                 "base --spot --queued -y");
  EXPECT_EQ(2, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("exists as v4-16, base")) << r.output;
  // Down: without a terminal, -y is needed; with it, the queued resource and node go.
  r = RunCommand(Podrun() + " down --tpu node-up --zone zone-a < /dev/null");
  EXPECT_EQ(2, r.exit_code) << r.output;
  r = RunCommand(Podrun() + " down --tpu node-up --zone zone-a -y");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("[]", Gcloud("compute tpus tpu-vm list --zone zone-a --format=json").substr(0, 2));
  EXPECT_EQ("[]",
            Gcloud("compute tpus queued-resources list --zone zone-a --format=json").substr(0, 2));
}

TEST_F(SpotTest, GcloudErrorsReachTheUserAsGcloudSaidThemAndLeaveNothing) {
  const std::string spec =
      WriteSpec("bad-type", "node-bad", "accelerator_type: v9-8, version: base", "run: true\n");
  CommandResult r = RunCommand(Podrun() + " launch " + spec);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("INVALID_ARGUMENT: Invalid value for field 'accelerator_type': 'v9-8'"))
      << r.output;
  const std::string quota =
      "ERROR: (gcloud.compute.tpus.tpu-vm.create) RESOURCE_EXHAUSTED: Quota "
      "'TPUV4sPreemptiblePodPerProjectPerZoneForTPUAPI' exhausted. Limit 32 in zone zone-a";
  WriteConfig(quota);
  const std::string spot = WriteSpec(
      "no-quota", "node-q", "accelerator_type: v4-16, version: base, spot: true", "run: true\n");
  r = RunCommand(Podrun() + " launch " + spot);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(quota)) << r.output;
  // A queued request that expires in the queue is named with its state (up SPEC.yaml).
  WriteConfig("");
  const std::string expiring =
      WriteSpec("expiring", "node-exp",
                "accelerator_type: v4-16, version: base, spot: true, queued: true, "
                "valid_until: 1s",
                "run: true\n");
  r = RunCommand(Podrun() + " up " + expiring + " -y");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("queued resource node-exp is FAILED")) << r.output;
  RunCommand(Podrun() + " down --tpu node-exp --zone zone-a -y");
  // Nothing left: no node, no job recorded, no agent on any worker.
  EXPECT_EQ("[]", Gcloud("compute tpus tpu-vm list --zone zone-a --format=json").substr(0, 2));
  EXPECT_EQ(std::string::npos, RunCommand(Podrun() + " ls --json").output.find("no-quota"));
  EXPECT_EQ(0, pod_->CountProcesses("podrun-agent"));
}

// The SHA256 fingerprint of a public key file: "SHA256:...".
std::string Fingerprint(const std::string& pub) {
  std::smatch m;
  const std::string out = RunCommand("ssh-keygen -lf " + pub).output;
  return std::regex_search(out, m, std::regex("SHA256:[A-Za-z0-9+/]+")) ? m[0].str() : "";
}

TEST_F(SpotTest, ALaunchPinsTheHostKeysItsNewNodePublishesAndRefusesAnotherKeyNamingBoth) {
  // A known_hosts of this test's own, holding stale keys for every pool address.
  const std::string known_hosts = Dir() + "/pin_known_hosts";
  const std::string stale = Dir() + "/stale_key";
  RunCommand("rm -f " + stale + "* && ssh-keygen -q -t ed25519 -N '' -f " + stale + " < /dev/null");
  const std::string stale_key = RunCommand("cut -d' ' -f1,2 " + stale + ".pub").output;
  {
    std::ofstream out(known_hosts);
    for (int i = 0; i < kWorkers; ++i) out << pod_->address(i) << " " << stale_key;
  }
  const std::string spec =
      WriteSpec("pinned", "node-pin", "accelerator_type: v4-16, version: base, spot: true",
                "run: echo hello from $(hostname)\n", known_hosts);
  CommandResult r = RunCommand(Podrun() + " launch " + spec);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("pinned the host keys its 2 of 2 workers publish"))
      << r.output;
  EXPECT_NE(std::string::npos, ReadTextFile(State() + "/calls.log").find("get-guest-attributes"));
  // The stale keys of the new node's addresses are gone, the real ones pinned (2 workers).
  const std::string pinned = ReadTextFile(known_hosts);
  int real = 0;
  for (int i = 0; i < kWorkers; ++i) {
    const std::string key = RunCommand("cut -d' ' -f2 " + pod_->dir() + "/" + pod_->name(i) +
                                       "/ssh_host_ed25519_key.pub")
                                .output;
    real += pinned.find(key.substr(0, key.size() - 1)) != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(2, real) << pinned;
  RunCommand(Podrun() + " down --tpu node-pin --zone zone-a -y");

  // The API publishes another key than the machines offer: refused, naming both fingerprints.
  nlohmann::json overrides;
  for (int i = 0; i < kWorkers; ++i)
    overrides[pod_->address(i)] = stale_key.substr(0, stale_key.size() - 1);
  WriteConfig("", {{"host_key_overrides", overrides}});
  const std::string spec2 =
      WriteSpec("impostor", "node-imp", "accelerator_type: v4-16, version: base, spot: true",
                "run: echo should not run\n", known_hosts);
  r = RunCommand(Podrun() + " launch " + spec2);
  ASSERT_NE("", Fingerprint(stale + ".pub"));
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("HOST KEY CHANGED")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("pins ssh-ed25519 " + Fingerprint(stale + ".pub")))
      << r.output;
  int offered = 0;
  for (int i = 0; i < kWorkers; ++i) {
    const std::string fp =
        Fingerprint(pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key.pub");
    offered += r.output.find("now offers ssh-ed25519 " + fp) != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(offered, 1) << r.output;
  // The pin came from the API: the machine answering is not that VM; removing it is never
  // advised.
  EXPECT_NE(std::string::npos, r.output.find("not that VM")) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("ssh-keygen -R")) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("should not run")) << r.output;
  RunCommand(Podrun() + " down --tpu node-imp --zone zone-a -y");
}

TEST_F(SpotTest, AKeeperKilledLeavesTheJobRunningAndStatusSaysHowToWatchAgain) {
  const std::string spec =
      WriteSpec("kept", "node-k", "accelerator_type: v4-16, version: base, spot: true",
                "restarts: 2\nrun: |\n  echo started\n  sleep 60\n");
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  ASSERT_FALSE(job.empty()) << r.output;
  nlohmann::json status = Status(job);
  ASSERT_EQ("running", status["keeper"]["state"]) << status.dump();
  const int keeper = status["keeper"]["pid"].get<int>();
  ASSERT_EQ(0, ::kill(keeper, SIGKILL));
  ASSERT_TRUE(
      WaitUntil([&] { return Status(job)["keeper"]["state"] == "gone"; }, std::chrono::seconds(5)));
  // The job runs on; status says that nothing watches it and how to watch again.
  r = RunCommand(Podrun() + " status " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("attempt 1: running")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("keeper: gone (pid " + std::to_string(keeper)))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("start watching again with: podrun watch " + job))
      << r.output;
  // Watching again starts one keeper; a second is not started.
  r = RunCommand(Podrun() + " watch " + job);
  ASSERT_EQ(0, r.exit_code) << r.output;
  r = RunCommand(Podrun() + " watch " + job);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("already driven by its keeper")) << r.output;
  status = Status(job);
  EXPECT_EQ("running", status["keeper"]["state"]) << status.dump();
  EXPECT_NE(keeper, status["keeper"]["pid"].get<int>());
  EXPECT_EQ(1u, Keepers(job).size());
  // stop ends the job and its keeper.
  r = RunCommand(Podrun() + " stop " + job + " --grace 1");
  ASSERT_EQ(0, r.exit_code) << r.output;
  status = Status(job);
  EXPECT_EQ("ended", status["keeper"]["state"]) << status.dump();
  EXPECT_EQ("stopped", status["attempt"]["state"]) << status.dump();
  EXPECT_EQ(0u, Keepers(job).size());
}

// How many lines of `text` contain `needle`.
int CountLines(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// The calls.log lines (gcloud argv as JSON arrays) of `verb` ("describe", "create", "delete") on
// `node`, from line `from` on.
int Calls(const std::string& calls, const std::string& verb, const std::string& node,
          size_t from = 0) {
  std::istringstream in(calls);
  int n = 0;
  size_t line_no = 0;
  for (std::string line; std::getline(in, line); ++line_no) {
    if (line_no < from) continue;
    n += line.find("\"" + verb + "\", \"" + node + "\"") != std::string::npos;
  }
  return n;
}
size_t LineCount(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(SpotTest, TheKeepersBudgetCountsOnlyTheRestartsSinceTheLastRerun) {
  // A program that always fails, restarts: 1, detached: each launch or rerun gets its own restart.
  const std::string spec = Dir() + "/budget.yaml";
  std::ofstream(spec) << "name: budget\npod: {local: 1}\nrestarts: 1\nrun: |\n  sleep 1\n"
                         "  exit 3\n";
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  auto ended = [&](int attempts) {
    return WaitUntil(
        [&] {
          nlohmann::json s = Status(job);
          return s["attempt"]["number"] == attempts && s["attempt"]["state"] == "failed" &&
                 s["keeper"]["state"] == "ended";
        },
        std::chrono::seconds(40));
  };
  ASSERT_TRUE(ended(2)) << Status(job).dump()
                        << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  r = RunCommand(Podrun() + " rerun " + job + " -d < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  ASSERT_TRUE(ended(4)) << Status(job).dump()
                        << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  nlohmann::json status = Status(job);
  EXPECT_EQ("restart-after-failure", status["attempt"]["reason"]) << status.dump();
  EXPECT_EQ("failure", status["attempt"]["resumed_from"]) << status.dump();
  // The keeper used one restart, no more: it has ended, and nothing makes a fifth attempt.
  ASSERT_TRUE(WaitUntil([&] { return Keepers(job).empty(); }, std::chrono::seconds(10)));
  EXPECT_EQ(4, Status(job)["attempt"]["number"]);
  KillLocalAgents(Home());
}

TEST_F(SpotTest, ARerunWhileTheKeeperRunsIsRefusedAndDownEndsTheKeeperFirst) {
  const std::string spec =
      WriteSpec("driven", "node-dr", "accelerator_type: v4-16, version: base, spot: true",
                "restarts: 2\nrun: sleep 60\n");
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  nlohmann::json status = Status(job);
  ASSERT_EQ("running", status["keeper"]["state"]) << status.dump();
  const int keeper = status["keeper"]["pid"].get<int>();
  // One driver per job: the rerun is refused, naming the keeper.
  r = RunCommand(Podrun() + " rerun " + job + " < /dev/null");
  EXPECT_EQ(2, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("keeper (pid " + std::to_string(keeper))) << r.output;
  EXPECT_EQ(1, Status(job)["attempt"]["number"]);
  // down ends the keeper before it deletes the node: nothing creates it again.
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  r = RunCommand(Podrun() + " down --tpu node-dr --zone zone-a -y");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("keeper of job " + job)) << r.output;
  // Its keeper is gone (no process of it left): nothing can create the node again.
  ASSERT_TRUE(WaitUntil([&] { return Keepers(job).empty(); }, std::chrono::seconds(10)));
  EXPECT_EQ(0, Calls(ReadTextFile(State() + "/calls.log"), "create", "node-dr", before));
  EXPECT_EQ(std::string::npos,
            Gcloud("compute tpus tpu-vm list --zone zone-a --format=json").find("node-dr"));
  EXPECT_EQ("ended", Status(job)["keeper"]["state"]);
}

TEST_F(SpotTest, ANodeDeletedBySomeoneElseIsNotBroughtBack) {
  const std::string spec =
      WriteSpec("removed", "node-rm", "accelerator_type: v4-16, version: base, spot: true",
                "restarts: 2\nrun: sleep 60\n");
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  const std::string addresses =
      Gcloud("compute tpus tpu-vm describe node-rm --zone zone-a --format=json");
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  // Someone deletes the node: its VMs go with it.
  Gcloud("compute tpus tpu-vm delete node-rm --zone zone-a --quiet");
  for (int i = 0; i < kWorkers; ++i) {
    if (addresses.find("\"" + pod_->address(i) + "\"") != std::string::npos) pod_->Reboot(i);
  }
  ASSERT_TRUE(WaitUntil([&] { return Status(job)["keeper"]["state"] == "ended"; },
                        std::chrono::seconds(60)))
      << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  const std::string log = ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  EXPECT_NE(std::string::npos, log.find("no longer exists and podrun did not delete it")) << log;
  EXPECT_EQ(0, Calls(ReadTextFile(State() + "/calls.log"), "create", "node-rm", before)) << log;
  EXPECT_EQ(1, Status(job)["attempt"]["number"]);
}

TEST_F(SpotTest, AKeeperKilledBetweenDeleteAndCreateFinishesTheRecreationWhenWatchedAgain) {
  // Deletes take 3 s here: long enough to kill the keeper in the middle of one.
  nlohmann::json config = nlohmann::json::parse(ReadTextFile(State() + "/config.json"));
  config["delete_seconds"] = 3;
  config["create_seconds"] = 3;
  std::ofstream(State() + "/config.json") << config.dump();
  const std::string spec =
      WriteSpec("midway", "node-mid", "accelerator_type: v4-16, version: base, spot: true",
                "restarts: 2\nrun: |\n  echo attempt $PODRUN_ATTEMPT\n  sleep 60\n");
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  const int keeper = Status(job)["keeper"]["pid"].get<int>();
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  Preempt("node-mid");
  // While it recreates, the job reads as recovering, not failed.
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = Status(job);
        return s["recovering"].is_object() && s["attempt"]["state"] == "recovering";
      },
      std::chrono::seconds(30)))
      << Status(job).dump() << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  EXPECT_NE(std::string::npos, RunCommand(Podrun() + " ls", false).output.find("recovering"));
  ASSERT_TRUE(WaitUntil(
      [&] { return Calls(ReadTextFile(State() + "/calls.log"), "delete", "node-mid", before) > 0; },
      std::chrono::seconds(30)));
  ASSERT_EQ(0, ::kill(keeper, SIGKILL));  // mid-delete: the node goes, nobody creates it
  ASSERT_TRUE(WaitUntil(
      [&] {
        return Gcloud("compute tpus tpu-vm list --zone zone-a --format=json").find("node-mid") ==
               std::string::npos;
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(0, Calls(ReadTextFile(State() + "/calls.log"), "create", "node-mid", before));
  // gcloud's default project changes meanwhile: the keeper keeps to the one pinned at launch.
  config["project"] = "elsewhere";
  std::ofstream(State() + "/config.json") << config.dump();
  // The next keeper finds podrun's own recreation half done, and finishes it.
  r = RunCommand(Podrun() + " watch " + job);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = Status(job);
        return s["attempt"]["number"] == 2 && s["attempt"]["state"] == "running";
      },
      std::chrono::seconds(60)))
      << Status(job).dump() << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  nlohmann::json status = Status(job);
  EXPECT_EQ("recovery-after-preemption", status["attempt"]["reason"]) << status.dump();
  EXPECT_TRUE(status["recovering"].is_null()) << status.dump();
  // One preemption, over, however many keepers its recovery took.
  ASSERT_EQ(1u, status["preemptions"].size()) << status.dump();
  EXPECT_FALSE(status["preemptions"][0]["back"].is_null()) << status.dump();
  const std::string calls = ReadTextFile(State() + "/calls.log");
  EXPECT_EQ(1, Calls(calls, "create", "node-mid", before));
  EXPECT_EQ(1, CountLines(calls, R"(["compute", "tpus", "tpu-vm", "create", "node-mid", )"
                                 R"("--zone", "zone-a", "--project", "fake-project")"))
      << calls;
  RunCommand(Podrun() + " stop " + job + " --grace 1");
  RunCommand(Podrun() + " down --tpu node-mid --zone zone-a --project fake-project -y");
}

TEST_F(SpotTest, FourLostWorkersOfOneNodeCostOneDescribeAndTheirReasonIsSaidOnce) {
  const std::string spec = WriteSpec(
      "four", "node-four", "accelerator_type: v4-32, version: base, spot: true",
      "preemptions: 0\nrun: sleep 60\n");  // no recovery: the run ends with the preemption
  std::atomic<size_t> preempted_at{0};
  std::thread preempt([&] {
    // Once the job runs on every worker (its attempt reads running), not after a guessed time.
    WaitUntil([] { return Status("four")["attempt"]["state"] == "running"; },
              std::chrono::seconds(90));
    preempted_at = LineCount(ReadTextFile(State() + "/calls.log"));
    Preempt("node-four");
  });
  CommandResult r = RunCommand(Podrun() + " launch " + spec + " < /dev/null");
  preempt.join();
  EXPECT_EQ(1, r.exit_code) << r.output;
  const std::string calls = ReadTextFile(State() + "/calls.log");
  // After the preemption, the four lost workers share each answer (asked at most once per 3 s
  // per node): the gang ends within a few seconds, so one or two describes, never one per worker.
  const int describes = Calls(calls, "describe", "node-four", preempted_at);
  EXPECT_GE(describes, 1) << calls;
  EXPECT_LE(describes, 2) << calls;
  EXPECT_EQ(0, CountLines(r.output, "PREEMPTED (gcloud); preempted:")) << r.output;
  EXPECT_EQ(0, CountLines(r.output, "preempted: preempted:")) << r.output;
  EXPECT_GE(CountLines(r.output, "lost: preempted: TPU node node-four is PREEMPTED (gcloud)"), 1)
      << r.output;
  RunCommand(Podrun() + " down --tpu node-four --zone zone-a -y");
}

TEST_F(SpotTest, TheSpecsCreateIsNeverAppliedToANodeChosenOnTheCommandLine) {
  const std::string spec = WriteSpec(
      "other", "node-mine", "accelerator_type: v4-16, version: base, spot: true", "run: true\n");
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  CommandResult r =
      RunCommand(Podrun() + " launch " + spec + " --tpu node-other --zone zone-a < /dev/null");
  EXPECT_EQ(3, r.exit_code) << r.output;  // node-other does not exist: nothing creates it
  EXPECT_NE(std::string::npos, r.output.find("the spec's create: is for tpu node-mine"))
      << r.output;
  const std::string calls = ReadTextFile(State() + "/calls.log");
  EXPECT_EQ(0, Calls(calls, "create", "node-other", before)) << calls;
  EXPECT_EQ(0, Calls(calls, "create", "node-mine", before)) << calls;
}

// The queued resources the stand-in holds in zone-a, as JSON text.
std::string QueuedResources() {
  return RunCommand("env FAKE_GCLOUD_STATE=" + State() + " " + PODRUN_SOURCE_DIR +
                        "/tests/fake-gcloud compute tpus queued-resources list --zone zone-a "
                        "--format=json",
                    false)
      .output;
}

TEST_F(SpotTest, CtrlCToUpsProcessGroupWhileGcloudCreatesDeletesWhatItQueuedAndExits130) {
  // The API takes the queued resource at once; gcloud's answer takes 60 s: the create is in
  // flight when the terminal's Ctrl-C (SIGINT to the whole foreground group) comes.
  WriteConfig("", {{"answer_seconds", {{"create", 60}}}});
  const std::string output = Dir() + "/up-interrupted.out";
  const pid_t up = StartInOwnGroup(Podrun() +
                                       " up --tpu node-int --zone zone-a --accelerator-type v4-16 "
                                       "--version base --spot --queued -y",
                                   output);
  ASSERT_GT(up, 0);
  ASSERT_TRUE(WaitUntil([] { return QueuedResources().find("node-int") != std::string::npos; },
                        std::chrono::seconds(30)))
      << ReadTextFile(output);
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(0, ::kill(-up, SIGINT));
  int status = 0;
  ASSERT_EQ(up, ::waitpid(up, &status, 0));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  const std::string said = ReadTextFile(output);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << "\n" << said;
  EXPECT_EQ(130, WEXITSTATUS(status)) << said;
  EXPECT_LT(took, 10.0) << said;
  EXPECT_NE(std::string::npos,
            said.find("tpu node-int (zone zone-a): deleting what podrun made, so that nothing is "
                      "left"))
      << said;
  EXPECT_EQ("[]", QueuedResources().substr(0, 2)) << said;
  EXPECT_EQ(std::string::npos,
            Gcloud("compute tpus tpu-vm list --zone zone-a --format=json").find("node-int"));
}

TEST_F(SpotTest, AStopDuringAQueuedRecreationEndsTheKeeperEmptiesTheQueueAndReadsStopped) {
  const std::string spec = WriteSpec(
      "stopped-mid", "node-sq", "accelerator_type: v4-16, version: base, spot: true, queued: true",
      "restarts: 2\nrun: sleep 60\n");
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  ASSERT_EQ("running", Status(job)["keeper"]["state"]);
  // From now on the queue keeps what is asked of it waiting (no capacity for an hour).
  WriteConfig("", {{"queue_seconds", 3600}});
  Preempt("node-sq");
  ASSERT_TRUE(WaitUntil(
      [&] {
        const nlohmann::json s = Status(job);
        return s["recovering"].is_object() && s["recovering"]["phase"] == "recreating" &&
               s["recovering"]["slice"] == "tpu node-sq" &&
               s["recovering"]["what"].get<std::string>().find("WAITING_FOR_RESOURCES") !=
                   std::string::npos;
      },
      std::chrono::seconds(60)))
      << Status(job).dump() << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  ASSERT_NE(std::string::npos, QueuedResources().find("node-sq"));
  r = RunCommand(Podrun() + " stop " + job + " --grace 1");
  // 3 when the preempted workers' pending stops cannot reach their new VMs (another host key).
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("keeper of job " + job)) << r.output;
  const std::string log = ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  // The keeper is gone, what it queued is deleted, and the job reads stopped from now on.
  EXPECT_EQ(0u, Keepers(job).size());
  EXPECT_EQ(std::string::npos, QueuedResources().find("node-sq")) << QueuedResources() << log;
  EXPECT_NE(std::string::npos,
            log.find("node-sq (zone zone-a, project fake-project): deleting what podrun made"))
      << log;
  nlohmann::json status = Status(job);
  EXPECT_EQ("stopped", status["attempt"]["state"]) << status.dump();
  EXPECT_TRUE(status["recovering"].is_null()) << status.dump();
  EXPECT_EQ("ended", status["keeper"]["state"]) << status.dump();
  nlohmann::json jobs = nlohmann::json::parse(RunCommand(Podrun() + " ls --json", false).output);
  for (const auto& j : jobs) {
    if (j["id"] == job) {
      EXPECT_EQ("stopped", j["state"]) << j.dump();
    }
  }
  // A later watch has nothing to do: nothing is created again.
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  r = RunCommand(Podrun() + " watch " + job + " --foreground < /dev/null");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ(0, Calls(ReadTextFile(State() + "/calls.log"), "create", "node-sq", before));
  RunCommand(Podrun() + " down --tpu node-sq --zone zone-a -y");
}

TEST_F(SpotTest, DownForgetsARecreationIntentSoALaterWatchDoesNotBringTheNodeBack) {
  // Deletes take 3 s: long enough to kill the keeper in the middle of one (its intent stays).
  WriteConfig("", {{"delete_seconds", 3}});
  const std::string spec =
      WriteSpec("downed", "node-dn", "accelerator_type: v4-16, version: base, spot: true",
                "restarts: 2\nrun: sleep 60\n");
  CommandResult r = RunCommand(Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  const int keeper = Status(job)["keeper"]["pid"].get<int>();
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  Preempt("node-dn");
  ASSERT_TRUE(WaitUntil(
      [&] { return Calls(ReadTextFile(State() + "/calls.log"), "delete", "node-dn", before) > 0; },
      std::chrono::seconds(30)));
  ASSERT_EQ(0, ::kill(keeper, SIGKILL));  // mid-delete: the intent to create it again stays
  r = RunCommand(Podrun() + " down --tpu node-dn --zone zone-a -y");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("job " + job + ": it will not create node-dn again"))
      << r.output;
  // A later keeper finds the node gone and no intent of podrun's own: it ends, creating nothing.
  r = RunCommand(Podrun() + " watch " + job + " --foreground < /dev/null", false);
  EXPECT_EQ(0, Calls(ReadTextFile(State() + "/calls.log"), "create", "node-dn", before))
      << r.output;
  EXPECT_EQ(std::string::npos,
            Gcloud("compute tpus tpu-vm list --zone zone-a --format=json").find("node-dn"));
}

// The checkpointing example's run line: 40 steps of 0.2 s, a checkpoint every 4.
std::string TrainRun() {
  return "run: exec /usr/bin/python3 -u train.py --steps 40 --checkpoint-every 4 "
         "--step-seconds 0.2\n";
}
std::string Example() { return std::string(PODRUN_SOURCE_DIR) + "/examples/checkpointing"; }
std::string FinalHash(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("final weights sha256: ([0-9a-f]{64})"))
             ? m[1].str()
             : "";
}
// The step of the checkpoint `latest` points at in `dir` (0: none yet).
int LatestCheckpoint(const std::string& dir) {
  std::smatch m;
  const std::string latest = ReadTextFile(dir + "/latest");
  return std::regex_search(latest, m, std::regex("ckpt-(\\d+)[.]pt")) ? std::stoi(m[1]) : 0;
}

// What happened, by the program's own clock: each step's time per attempt and worker, as the
// workers wrote it to a shared file ("attempt worker step seconds" lines).
struct TruthSteps {
  std::map<int, std::pair<double, double>> span;  // by attempt: first, last step
  std::map<std::pair<int, int>, double> first;    // by (attempt, worker)
};
TruthSteps ReadTruth(const std::string& path) {
  TruthSteps truth;
  std::istringstream lines(ReadTextFile(path));
  for (std::string line; std::getline(lines, line);) {
    int attempt = 0, worker = 0, step = 0;
    double at = 0;
    if (std::sscanf(line.c_str(), "%d %d %d %lf", &attempt, &worker, &step, &at) != 4) continue;
    auto [it, fresh] = truth.span.try_emplace(attempt, at, at);
    if (!fresh) {
      it->second.first = std::min(it->second.first, at);
      it->second.second = std::max(it->second.second, at);
    }
    auto [f, new_worker] = truth.first.try_emplace({attempt, worker}, at);
    if (!new_worker) f->second = std::min(f->second, at);
  }
  return truth;
}

TEST_F(SpotTest, TheReportOfARunWithAPreemptionAndARestartMatchesWhatHappened) {
  // Attempt 1 steps until its node is preempted; attempt 2 (after the recovery) fails on w0 at
  // step 15; attempt 3 (after the restart) ends at step 15. Each step is also written, with the
  // worker's clock, to a file all workers share: what happened, to compare the report with.
  const std::string truth = Shared() + "/truth";
  std::filesystem::create_directories(truth);
  const std::string spec = WriteSpec(
      "report", "node-report", "accelerator_type: v4-16, version: base, spot: true",
      "restarts: 2\nmounts:\n  - {type: bind, source: " + truth +
          ", path: /mnt/truth}\nrun: |\n"
          "  for i in $(seq 1 100000); do\n"
          "    echo \"step $i\"\n"
          "    echo \"$PODRUN_ATTEMPT $PODRUN_WORKER_ID $i $(date +%s.%N)\" >> /mnt/truth/steps\n"
          "    if [ $PODRUN_ATTEMPT = 2 ] && [ $i = 15 ] && [ $PODRUN_WORKER_ID = 0 ]; then exit "
          "3; "
          "fi\n"
          "    if [ $PODRUN_ATTEMPT = 3 ] && [ $i = 15 ]; then exit 0; fi\n"
          "    sleep 0.2\n"
          "  done\n");
  CommandResult r = RunCommand("setsid " + Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return ReadTruth(truth + "/steps").span.count(1) &&
               LineCount(ReadTextFile(truth + "/steps")) >= 20;
      },
      std::chrono::seconds(60)));
  Preempt("node-report");
  ASSERT_TRUE(WaitUntil([&] { return Status(job)["attempt"]["state"] == "succeeded"; },
                        std::chrono::seconds(120)))
      << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  const TruthSteps happened = ReadTruth(truth + "/steps");
  ASSERT_EQ(3u, happened.span.size()) << ReadTextFile(truth + "/steps");

  r = RunCommand(Podrun() + " report " + job + " --json", false);
  ASSERT_EQ(0, r.exit_code) << r.output;
  const nlohmann::json report = nlohmann::json::parse(r.output);
  ASSERT_EQ(3u, report["attempts"].size()) << r.output;
  EXPECT_EQ("launch", report["attempts"][0]["reason"]);
  EXPECT_EQ("recovery-after-preemption", report["attempts"][1]["reason"]);
  EXPECT_EQ("restart-after-failure", report["attempts"][2]["reason"]);
  // Time making steps, and time lost to the preemption and to the failure, within a second of
  // what the program's own clock says; two around the preemption: the steps a preempted worker
  // printed after its step record last reached podrun are gone with its VM (up to a record
  // interval and more on a loaded machine: 1.04 s seen with ctest -j3).
  double steps = 0;
  for (const auto& [attempt, span] : happened.span) steps += span.second - span.first;
  EXPECT_NEAR(steps, report["steps_s"].get<double>(), 2.0) << r.output;
  EXPECT_NEAR(happened.span.at(2).first - happened.span.at(1).second,
              report["lost_s"]["preemption"].get<double>(), 2.0)
      << r.output;
  EXPECT_NEAR(happened.span.at(3).first - happened.span.at(2).second,
              report["lost_s"]["failure"].get<double>(), 1.0)
      << r.output;
  EXPECT_EQ(0, report["lost_s"]["hang"].get<double>());
  EXPECT_NEAR(report["steps_s"].get<double>() / report["wall_s"].get<double>(),
              report["goodput"].get<double>(), 0.01);
  EXPECT_GE(report["wall_s"].get<double>(), happened.span.at(3).second - happened.span.at(1).first);
  // The node this launch created is the startup's first part (the stand-in takes 1 s).
  ASSERT_FALSE(report["startup"].empty()) << r.output;
  EXPECT_EQ("creating", report["startup"][0]["part"]) << r.output;
  EXPECT_GE(report["startup"][0]["s"].get<double>(), 0.9) << r.output;
  EXPECT_EQ("creating", report["attempts"][0]["provisioning"][0]["phase"]) << r.output;
  // The recovery is where it happened: after attempt 1's last step, before attempt 2's first.
  ASSERT_EQ(1u, report["recoveries"].size()) << r.output;
  EXPECT_GE(report["recoveries"][0]["seen_ns"].get<int64_t>() / 1e9,
            happened.span.at(1).second - 1.0);
  EXPECT_LE(report["recoveries"][0]["back_ns"].get<int64_t>() / 1e9, happened.span.at(2).first);
  // Every worker of every attempt went through its phases in order, each ended before its
  // first step.
  for (const auto& attempt : report["attempts"]) {
    const int number = attempt["number"];
    for (const auto& w : attempt["workers"]) {
      std::vector<std::string> names;
      int64_t previous_end = 0;
      for (const auto& phase : w["phases"]) {
        names.push_back(phase["phase"]);
        ASSERT_TRUE(phase["end_ns"].is_number()) << phase.dump();
        EXPECT_LE(phase["start_ns"].get<int64_t>(), phase["end_ns"].get<int64_t>());
        EXPECT_GE(phase["start_ns"].get<int64_t>() + 1'000'000, previous_end) << phase.dump();
        previous_end = phase["end_ns"].get<int64_t>();
      }
      EXPECT_EQ((std::vector<std::string>{"agents", "mounts", "start"}), names) << w.dump();
      const double first = happened.first.at({number, w["worker"].get<int>()});
      EXPECT_LE(previous_end / 1e9, first + 0.5) << w.dump();
      EXPECT_NEAR(first, w["first_step_ns"].get<int64_t>() / 1e9, 0.5) << w.dump();
    }
  }
  // The page: rendered by a real browser, a screenshot to look at.
  const std::string html = Dir() + "/report.html";
  r = RunCommand(Podrun() + " report " + job + " --html " + html);
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string page = ReadTextFile(html);
  EXPECT_NE(page.find("PREEMPTED"), std::string::npos);
  if (std::filesystem::exists("/usr/bin/chromium")) {
    const std::string png = ::testing::TempDir() + "/podrun-report-preemption.png";
    RunCommand("rm -f " + png);
    RunCommand(
        "timeout 60 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars "
        "--window-size=1400,900 --screenshot=" +
        png + " file://" + html);
    ASSERT_TRUE(std::filesystem::exists(png));
    EXPECT_GT(std::filesystem::file_size(png), 20000u);
    std::printf("report screenshot: %s\n", png.c_str());
  }
  RunCommand(Podrun() + " down --tpu node-report --zone zone-a -y");
}

TEST_F(SpotTest, ADetachedCheckpointedRunOnASpotNodePreemptedTwiceEndsWithTheSameWeights) {
  // The reference: the same training, uninterrupted, on 2 local workers.
  std::filesystem::create_directories(Shared() + "/reference");
  const std::string reference = Dir() + "/reference.yaml";
  std::ofstream(reference) << "pod: {local: 2}\nsync: " << Example()
                           << "\nenv: {CHECKPOINT_DIR: " << Shared() << "/reference}\n"
                           << TrainRun();
  CommandResult r = RunCommand(Podrun() + " launch " + reference);
  ASSERT_EQ(0, r.exit_code) << r.output;
  KillLocalAgents(Home());
  const std::string want = FinalHash(r.output);
  ASSERT_FALSE(want.empty()) << r.output;

  // The same on a spot node, detached: the keeper alone sees it through two preemptions. The
  // checkpoints live on a bind mount of a directory all workers share; setup leaves a line per
  // run in it.
  const std::string ckpt = Shared() + "/ckpt";
  std::filesystem::create_directories(ckpt);
  const std::string spec =
      WriteSpec("ckpt", "node-ckpt", "accelerator_type: v4-16, version: base, spot: true",
                "restarts: 4\nworkdir: ~/ckpt-example\nsync: " + Example() +
                    "\nmounts:\n  - {type: bind, source: " + ckpt +
                    ", path: /mnt/ckpt}\nenv: {CHECKPOINT_DIR: /mnt/ckpt, DIST_TIMEOUT: '20'}\n"
                    "setup: echo \"setup on $(hostname)\" >> /mnt/ckpt/setup.log\n" +
                    TrainRun());
  r = RunCommand("setsid " + Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  for (int preemption = 1; preemption <= 2; ++preemption) {
    // Mid-run: once this attempt has written a checkpoint of its own.
    const int past = LatestCheckpoint(ckpt);
    ASSERT_TRUE(WaitUntil([&] { return LatestCheckpoint(ckpt) > past; }, std::chrono::seconds(60)))
        << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
    Preempt("node-ckpt");
    ASSERT_TRUE(WaitUntil(
        [&] {
          nlohmann::json s = Status(job);
          return s["attempt"]["number"] == preemption + 1 && s["attempt"]["state"] == "running";
        },
        std::chrono::seconds(60)))
        << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  }
  // The job's end is the keeper's too.
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = Status(job);
        return s["attempt"]["state"] == "succeeded" && s["keeper"]["state"] == "ended";
      },
      std::chrono::seconds(90)))
      << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  const std::string keeper_log = ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  nlohmann::json status = Status(job);
  EXPECT_EQ(3, status["attempt"]["number"]) << status.dump();
  EXPECT_EQ("preemption", status["attempt"]["resumed_from"]) << status.dump();
  ASSERT_EQ(2u, status["preemptions"].size()) << status.dump();
  for (const auto& p : status["preemptions"]) {
    EXPECT_EQ("PREEMPTED", p["state"]) << status.dump();
    EXPECT_TRUE(p["recreated"].get<bool>()) << status.dump();
    EXPECT_TRUE(p["lost_seconds"].is_number()) << status.dump();
    // The figure of the note: from the preemption seen to the gang running again.
    std::printf("preemption of attempt %d: lost %.1f s (node back after %.1f s)\n",
                p["attempt"].get<int>(), p["lost_seconds"].get<double>(),
                (p["back_ns"].get<int64_t>() - p["seen_ns"].get<int64_t>()) / 1e9);
  }
  EXPECT_EQ("ended", status["keeper"]["state"]) << status.dump();
  // Attempt 3 ran on VMs whose host keys changed (each preemption gives its VMs new keys, and the
  // stand-in hands out the pool's addresses in turn): podrun forgot the old keys of the node it
  // recreated and recorded the new ones of the VMs it runs on now.
  for (const auto& w : status["workers"]) {
    const std::string host = w["host"].get<std::string>();
    const size_t at = host.find('@') == std::string::npos ? 0 : host.find('@') + 1;
    const std::string address = host.substr(at, host.find(':', at) - at);
    int vm = -1;
    for (int i = 0; i < kWorkers; ++i) vm = pod_->address(i) == address ? i : vm;
    ASSERT_GE(vm, 0) << status.dump();
    const std::string new_key = RunCommand("cut -d' ' -f1,2 " + pod_->dir() + "/" + pod_->name(vm) +
                                               "/ssh_host_ed25519_key.pub",
                                           false)
                                    .output;
    EXPECT_NE(std::string::npos, ReadTextFile(pod_->known_hosts())
                                     .find(address + " " + new_key.substr(0, new_key.size() - 1)))
        << address << " " << new_key << ReadTextFile(pod_->known_hosts());
  }
  // Setup ran for real on the fresh VMs of each attempt (their stamps went with their homes).
  std::istringstream setups(ReadTextFile(ckpt + "/setup.log"));
  int setup_lines = 0;
  for (std::string line; std::getline(setups, line);) setup_lines += line.empty() ? 0 : 1;
  EXPECT_EQ(6, setup_lines) << ReadTextFile(ckpt + "/setup.log");
  // Resumed from its checkpoint, and the same weights as the uninterrupted run.
  r = RunCommand(Podrun() + " logs " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("attempt 3 (resumed from: preemption)")) << r.output;
  EXPECT_EQ(want, FinalHash(r.output)) << r.output << keeper_log;
  r = RunCommand(Podrun() + " status " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("2 preemptions:")) << r.output;
  RunCommand(Podrun() + " down --tpu node-ckpt --zone zone-a -y");
}

// The options of a job on the pod's workers as plain hosts (no gcloud), with a known_hosts of
// their current host keys (earlier tests' preemptions gave them new ones).
std::string HostsOptions(const TestPod& pod) {
  const std::string known_hosts = Dir() + "/hosts_known_hosts";
  std::ofstream out(known_hosts);
  for (int i = 0; i < kWorkers; ++i) {
    std::istringstream key(
        ReadTextFile(pod.dir() + "/" + pod.name(i) + "/ssh_host_ed25519_key.pub"));
    std::string type, blob;
    key >> type >> blob;
    out << pod.address(i) << " " << type << " " << blob << "\n";
  }
  return " --hosts @" + pod.host_file() + " -i " + pod.identity() + " --known-hosts " + known_hosts;
}

// Every line of `merged` is "[wK] line N", and each of the pod's workers printed 1..lines
// exactly once, in order.
void ExpectEveryLineOnceInOrder(const std::string& merged, int lines) {
  std::map<int, int> next;  // worker -> last line number seen
  std::istringstream in(merged);
  const std::regex line_re(R"(\[w(\d)\] line (\d+))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_re)) << line << "\n" << merged;
    const int w = std::stoi(m[1]);
    const int n = std::stoi(m[2]);
    ASSERT_EQ(next[w] + 1, n) << "worker " << w << "\n" << merged;
    next[w] = n;
  }
  ASSERT_EQ(static_cast<size_t>(kWorkers), next.size()) << merged;
  for (auto& [w, n] : next) EXPECT_EQ(lines, n) << "worker " << w << "\n" << merged;
}

// The pid of the job's keeper, once it has recorded itself (it takes its lock first).
int KeeperPid(const std::function<nlohmann::json()>& status) {
  nlohmann::json s;
  WaitUntil(
      [&] {
        s = status();
        return s["keeper"]["state"] == "running";
      },
      std::chrono::seconds(10));
  return s["keeper"]["pid"].is_number() ? s["keeper"]["pid"].get<int>() : -1;
}

// A keeper started by `podrun watch` in another folder (other files, another spec of the same
// name there) restarts the job with the tree the launch synced: the paths were recorded absolute.
TEST_F(SpotTest, AKeeperWatchedFromAnotherFolderRestartsWithTheLaunchsTree) {
  const std::string tree = Dir() + "/tree";
  const std::string elsewhere = Dir() + "/elsewhere";
  std::filesystem::create_directories(tree);
  std::filesystem::create_directories(elsewhere);
  const std::string spec_text =
      "name: tree\nsync: .\nrestarts: 1\nrun: |\n  echo \"attempt $PODRUN_ATTEMPT: $(cat "
      "marker.txt)\"\n  if [ $PODRUN_ATTEMPT = 1 ]; then sleep 2; exit 1; fi\n";
  std::ofstream(tree + "/tree.yaml") << spec_text;
  std::ofstream(tree + "/marker.txt") << "the launch's tree\n";
  std::ofstream(elsewhere + "/tree.yaml") << spec_text;
  std::ofstream(elsewhere + "/marker.txt") << "another folder\n";
  // Launched by a relative path from its folder.
  CommandResult r = RunCommand("cd " + tree + " && " + Podrun() + " launch -d tree.yaml" +
                               HostsOptions(*pod_) + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  const int keeper = KeeperPid([&] { return Status(job); });
  ASSERT_GT(keeper, 0) << Status(job).dump();
  ASSERT_EQ(0, ::kill(keeper, SIGKILL));
  ASSERT_TRUE(
      WaitUntil([&] { return Status(job)["keeper"]["state"] == "gone"; }, std::chrono::seconds(5)));
  r = RunCommand("cd " + elsewhere + " && " + Podrun() + " watch " + job);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = Status(job);
        return s["attempt"]["number"] == 2 && s["attempt"]["state"] == "succeeded";
      },
      std::chrono::seconds(40)))
      << Status(job).dump() << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  const std::string merged = ReadTextFile(Home() + "/jobs/" + job + "/2/merged.log");
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(std::string::npos,
              merged.find("[w" + std::to_string(i) + "] attempt 2: the launch's tree"))
        << merged;
  }
  EXPECT_EQ(std::string::npos, merged.find("another folder")) << merged;
}

// A keeper SIGKILLed mid-run and replaced by `podrun watch`: the replacement resumes every
// worker's log where the launcher's copy ends (each line once in merged.log), counts the stall
// watch from its own start (the job, older than stall_seconds, prints every 0.3 s: no hang) and
// the job runs to its end as one attempt.
TEST_F(SpotTest, AKeeperKilledMidRunIsReplacedWithoutARestartOrALineTwice) {
  constexpr int kLines = 40;
  const std::string spec = Dir() + "/lines.yaml";
  std::ofstream(spec) << "name: lines\nrestarts: 1\nstall_seconds: 3\nrun: |\n  for i in $(seq 1 "
                      << kLines << "); do echo \"line $i\"; sleep 0.3; done\n";
  CommandResult r =
      RunCommand(Podrun() + " launch -d " + spec + HostsOptions(*pod_) + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  const int keeper = KeeperPid([&] { return Status(job); });
  ASSERT_GT(keeper, 0) << Status(job).dump();
  const std::string merged = Home() + "/jobs/" + job + "/1/merged.log";
  // Killed once its copy holds a few lines of every worker, and the job is older than 3 s.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const std::string text = ReadTextFile(merged);
        for (int i = 0; i < kWorkers; ++i) {
          if (text.find("[w" + std::to_string(i) + "] line 12\n") == std::string::npos) {
            return false;
          }
        }
        return true;
      },
      std::chrono::seconds(20)))
      << ReadTextFile(merged);
  ASSERT_EQ(0, ::kill(keeper, SIGKILL));
  ASSERT_TRUE(
      WaitUntil([&] { return Status(job)["keeper"]["state"] == "gone"; }, std::chrono::seconds(5)));
  r = RunCommand(Podrun() + " watch " + job);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ASSERT_TRUE(WaitUntil([&] { return Status(job)["keeper"]["state"] == "ended"; },
                        std::chrono::seconds(30)))
      << Status(job).dump() << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  const nlohmann::json status = Status(job);
  EXPECT_EQ(1, status["attempt"]["number"]) << status.dump();
  EXPECT_EQ("succeeded", status["attempt"]["state"])
      << status.dump() << ReadTextFile(Home() + "/jobs/" + job + "/keeper.log");
  ExpectEveryLineOnceInOrder(ReadTextFile(merged), kLines);
}

// One driver per job: `podrun watch` beside an attached launch starts no keeper and says who
// drives the job (the launch's pid and host); --foreground alike.
TEST_F(SpotTest, WatchBesideAnAttachedLaunchStartsNothingAndNamesTheDriver) {
  const std::string spec = Dir() + "/attached.yaml";
  const std::string release = Shared() + "/attached.release";  // the workers see /var/tmp
  std::filesystem::remove(release);
  std::ofstream(spec) << "name: attached\nrestarts: 1\nrun: |\n  echo started\n"
                         "  while [ ! -e "
                      << release << " ]; do sleep 0.2; done\n";
  const std::string out = Dir() + "/attached.out";
  const pid_t launch = StartCommand(Podrun() + " launch " + spec + HostsOptions(*pod_) + " > " +
                                    out + " 2>&1 < /dev/null");
  ASSERT_GT(launch, 0);
  const std::string text = WaitForText(out, "[w3] started");
  const std::string job = JobId(text);
  ASSERT_FALSE(job.empty()) << text;
  char host[256] = {};
  ASSERT_EQ(0, ::gethostname(host, sizeof(host) - 1));
  for (const char* flags : {"", " --foreground"}) {
    CommandResult r = RunCommand(Podrun() + " watch " + job + flags + " < /dev/null");
    EXPECT_EQ(0, r.exit_code) << r.output;
    EXPECT_NE(std::string::npos, r.output.find("already driven by its attached launch (pid " +
                                               std::to_string(launch) + " on " + host + ")"))
        << r.output;
  }
  EXPECT_EQ(0u, Keepers(job).size());
  EXPECT_TRUE(Status(job)["keeper"].is_null()) << Status(job).dump();
  std::ofstream(release) << "go\n";
  int wstatus = 0;
  ASSERT_EQ(launch, ::waitpid(launch, &wstatus, 0));
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << ReadTextFile(out);
}

}  // namespace
}  // namespace podrun::testing

namespace podrun::testing {
namespace {

// The attempt's number and state as `status --json` says it, once it reads `state`.
bool AttemptReads(const nlohmann::json& s, int number, const std::string& state) {
  return s["attempt"]["number"] == number && s["attempt"]["state"] == state;
}

// A week on Spot capacity in a minute: three preemptions with `restarts: 1` are healed without
// using the restart (the second while the TPU API answers 503 for a minute, waited out with
// nothing created twice), then one failure of the program is restarted with it.
TEST_F(SpotTest, ThreePreemptionsUseNoRestartAndTheApisBadMinuteIsWaitedOut) {
  const std::string spec = WriteSpec(
      "week", "node-week", "accelerator_type: v4-16, version: base, spot: true",
      "restarts: 1\nrun: |\n  echo \"attempt $PODRUN_ATTEMPT from ${PODRUN_RESUMED_FROM:-start}\"\n"
      "  if [ \"$PODRUN_ATTEMPT\" -le 3 ]; then sleep 300; fi\n"
      "  if [ \"$PODRUN_ATTEMPT\" = 4 ]; then echo failing; exit 3; fi\n"
      "  echo finished\n");
  CommandResult r = RunCommand("setsid " + Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = JobId(r.output);
  const std::string keeper_log = Home() + "/jobs/" + job + "/keeper.log";
  for (int preemption = 1; preemption <= 3; ++preemption) {
    ASSERT_TRUE(WaitUntil([&] { return AttemptReads(Status(job), preemption, "running"); },
                          std::chrono::seconds(60)))
        << Status(job).dump() << ReadTextFile(keeper_log);
    const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
    Preempt("node-week");
    if (preemption == 2) {
      // The API's bad minute, from the preemption on: every gcloud the keeper runs fails.
      Gcloud("--admin outage 60");
      ASSERT_TRUE(WaitUntil(
          [&] {
            nlohmann::json s = Status(job);
            // The outage hits while the node is recreated: that is the phase, the API's silence
            // what it waits for.
            return s["recovering"].is_object() && s["recovering"]["phase"] == "recreating" &&
                   s["recovering"]["slice"] == "tpu node-week" &&
                   s["recovering"]["what"].get<std::string>().find(
                       "the TPU API has not answered for") != std::string::npos;
          },
          std::chrono::seconds(60)))
          << Status(job).dump() << ReadTextFile(keeper_log);
      // The keeper's heartbeat stays current through the outage.
      EXPECT_EQ("running", Status(job)["keeper"]["state"]) << Status(job).dump();
    } else {
      // While the keeper heals the job, status leaves the lost workers to it: no knocking at the
      // VMs being made again (whose new host keys are not pinned yet), nothing said of them.
      ASSERT_TRUE(WaitUntil([&] { return Status(job)["recovering"].is_object(); },
                            std::chrono::seconds(60)))
          << Status(job).dump() << ReadTextFile(keeper_log);
      const std::string during = RunCommand(Podrun() + " status " + job, false).output;
      EXPECT_EQ(std::string::npos, during.find("unreachable")) << during;
      EXPECT_EQ(std::string::npos, during.find("HOST KEY CHANGED")) << during;
    }
    ASSERT_TRUE(WaitUntil(
        [&] {
          return AttemptReads(Status(job), preemption + 1, "running") ||
                 Status(job)["attempt"]["number"] > preemption + 1;
        },
        std::chrono::seconds(150)))
        << Status(job).dump() << ReadTextFile(keeper_log);
    // Deleted once and created once: nothing made twice, whatever the API did meanwhile.
    const std::string calls = ReadTextFile(State() + "/calls.log");
    EXPECT_EQ(1, Calls(calls, "create", "node-week", before)) << calls.substr(0, 4000);
  }
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = Status(job);
        return s["attempt"]["state"] == "succeeded" && s["keeper"]["state"] == "ended";
      },
      std::chrono::seconds(90)))
      << Status(job).dump() << ReadTextFile(keeper_log);
  nlohmann::json status = Status(job);
  EXPECT_EQ(5, status["attempt"]["number"]) << status.dump();
  EXPECT_EQ("restart-after-failure", status["attempt"]["reason"]) << status.dump();
  EXPECT_EQ(1, status["budget"]["restarts_used"]) << status.dump();
  EXPECT_EQ(3, status["budget"]["preemptions_used"]) << status.dump();
  EXPECT_EQ("unlimited", status["budget"]["preemptions"]) << status.dump();
  EXPECT_EQ(3u, status["preemptions"].size()) << status.dump();
  // The programs' own lines: the last attempt resumed from the failure; the keeper counted the
  // preemptions apart from the restart.
  r = RunCommand(Podrun() + " logs " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("[w0] attempt 5 from failure")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] finished")) << r.output;
  const std::string kept = ReadTextFile(keeper_log);
  EXPECT_NE(std::string::npos, kept.find("(recovery after preemption 3; restarts used 0 of 1"))
      << kept;
  EXPECT_NE(std::string::npos, kept.find("(restart 1 of 1, resumed from failure)")) << kept;
  EXPECT_NE(std::string::npos, kept.find("[w0] failing")) << kept;
  // A log read days later says when: each of the keeper's own lines starts with the UTC time.
  EXPECT_TRUE(std::regex_search(
      kept,
      std::regex(R"((^|\n)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z podrun: attempt 2 of job )")))
      << kept;
  EXPECT_NE(std::string::npos, RunCommand(Podrun() + " status " + job, false)
                                   .output.find("restarts 1/1 \u00b7 preemptions 3"));
  RunCommand(Podrun() + " down --tpu node-week --zone zone-a -y");
}

// A keeper SIGKILLed while the old node is DELETING, then while the new one is CREATING: each time
// the next keeper (podrun watch, at once) finishes that recreation: one create, one preemption
// record, the intent closed, the new keys pinned.
TEST_F(SpotTest, AKeeperKilledWhileTheOldNodeDeletesOrTheNewOneCreatesIsFinishedByTheNext) {
  nlohmann::json config = nlohmann::json::parse(ReadTextFile(State() + "/config.json"));
  config["delete_seconds"] = 6;
  config["create_seconds"] = 6;
  std::ofstream(State() + "/config.json") << config.dump();
  const std::string spec =
      WriteSpec("phases", "node-ph", "accelerator_type: v4-16, version: base, spot: true",
                "run: |\n  echo attempt $PODRUN_ATTEMPT\n  sleep 300\n");
  CommandResult r = RunCommand("setsid " + Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;  // restarts: 0: pod.create alone starts a keeper
  const std::string job = JobId(r.output);
  const std::string keeper_log = Home() + "/jobs/" + job + "/keeper.log";
  for (const std::string verb : {"delete", "create"}) {
    const int attempt = Status(job)["attempt"]["number"].get<int>();
    const int keeper = KeeperPid([&] { return Status(job); });
    ASSERT_GT(keeper, 0) << Status(job).dump();
    const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
    Preempt("node-ph");
    ASSERT_TRUE(WaitUntil(
        [&] { return Calls(ReadTextFile(State() + "/calls.log"), verb, "node-ph", before) > 0; },
        std::chrono::seconds(60)))
        << ReadTextFile(keeper_log);
    ASSERT_EQ(0, ::kill(keeper, SIGKILL));  // mid-delete, or with the new node CREATING
    r = RunCommand(Podrun() + " watch " + job);
    ASSERT_EQ(0, r.exit_code) << r.output;
    ASSERT_TRUE(WaitUntil([&] { return AttemptReads(Status(job), attempt + 1, "running"); },
                          std::chrono::seconds(90)))
        << verb << " " << Status(job).dump() << ReadTextFile(keeper_log);
    const std::string calls = ReadTextFile(State() + "/calls.log");
    EXPECT_EQ(1, Calls(calls, "create", "node-ph", before)) << verb;
    nlohmann::json status = Status(job);
    EXPECT_TRUE(status["recovering"].is_null()) << status.dump();
    EXPECT_EQ(static_cast<size_t>(attempt), status["preemptions"].size()) << status.dump();
    EXPECT_FALSE(status["preemptions"].back()["back"].is_null()) << status.dump();
  }
  // The new node's keys were pinned (the job runs on it with known_hosts strictly checked).
  r = RunCommand(Podrun() + " logs " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("attempt 3")) << r.output;
  RunCommand(Podrun() + " stop " + job + " --grace 1");
  RunCommand(Podrun() + " down --tpu node-ph --zone zone-a -y");
}

// A stockout in the spec's zone: the node is made in its fallback zone at once (no capacity
// backoff), lives there (status and ls say so), is healed there after a preemption (the
// recreation tries zone-a first, still short, then zone-b at once), and `down SPEC` deletes it
// there.
TEST_F(SpotTest, AStockoutInTheZoneMovesToAFallbackZoneWhereTheNodeIsHealedAndDeleted) {
  WriteConfig("", {{"stockout_zones", {"zone-a"}}});
  const std::string spec =
      WriteSpec("moved", "node-moved",
                "accelerator_type: v4-16, version: base, spot: true, fallback_zones: [zone-b]",
                "run: |\n  echo \"attempt $PODRUN_ATTEMPT on $(hostname)\"\n  sleep 300\n");
  CommandResult r = RunCommand("setsid " + Podrun() + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("no capacity in zone-a: trying zone-b at once"))
      << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("trying again in")) << r.output;  // no backoff
  const std::string job = JobId(r.output);
  const std::string keeper_log = Home() + "/jobs/" + job + "/keeper.log";
  std::string calls = ReadTextFile(State() + "/calls.log");
  EXPECT_EQ(2, Calls(calls, "create", "node-moved")) << calls;  // zone-a refused, zone-b made
  nlohmann::json nodes = nlohmann::json::parse(Gcloud("--admin state"))["nodes"];
  ASSERT_EQ(1u, nodes.size()) << nodes.dump();
  EXPECT_EQ("zone-b", nodes.begin().value()["zone"]) << nodes.dump();
  ASSERT_TRUE(
      WaitUntil([&] { return AttemptReads(Status(job), 1, "running"); }, std::chrono::seconds(60)))
      << Status(job).dump() << ReadTextFile(keeper_log);
  EXPECT_EQ(nlohmann::json({"zone-b"}), Status(job)["job"]["zones"]) << Status(job).dump();
  CommandResult ls = RunCommand(Podrun() + " ls", false);
  EXPECT_TRUE(
      std::regex_search(ls.output, std::regex(job + R"(\s+moved\s+tpu:node-moved\s+zone-b\s)")))
      << ls.output;

  // Preempted where it lives: made again there (zone-a is still short), the job resumed.
  const size_t before = LineCount(ReadTextFile(State() + "/calls.log"));
  Preempt("node-moved", "zone-b");
  ASSERT_TRUE(
      WaitUntil([&] { return AttemptReads(Status(job), 2, "running"); }, std::chrono::seconds(120)))
      << Status(job).dump() << ReadTextFile(keeper_log);
  calls = ReadTextFile(State() + "/calls.log");
  EXPECT_EQ(2, Calls(calls, "create", "node-moved", before)) << calls;  // zone-a first, then b
  nodes = nlohmann::json::parse(Gcloud("--admin state"))["nodes"];
  ASSERT_EQ(1u, nodes.size()) << nodes.dump();
  EXPECT_EQ("zone-b", nodes.begin().value()["zone"]) << nodes.dump();
  nlohmann::json status = Status(job);
  EXPECT_EQ("preemption", status["attempt"]["resumed_from"]) << status.dump();
  EXPECT_EQ(nlohmann::json({"zone-b"}), status["job"]["zones"]) << status.dump();
  EXPECT_EQ(1, status["budget"]["preemptions_used"]) << status.dump();

  // down SPEC: the keeper ends first, then the node is deleted where it lives.
  r = RunCommand(Podrun() + " down " + spec + " -y");
  ASSERT_EQ(0, r.exit_code) << r.output;
  nodes = nlohmann::json::parse(Gcloud("--admin state"))["nodes"];
  EXPECT_EQ(0u, nodes.size()) << nodes.dump() << r.output;
  EXPECT_TRUE(WaitUntil([&] { return Status(job)["keeper"]["state"] != "running"; },
                        std::chrono::seconds(30)))
      << Status(job).dump();
}

}  // namespace
}  // namespace podrun::testing
