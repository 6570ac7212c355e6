// Integration tests of MIG slices (`--mig`, `pod.mig`; docs/reference.md "Discovery") on a real
// 4-worker testpod, with the real gcloud (Debian's google-cloud-cli) talking to
// scripts/fake-tpu-api on loopback, which serves the Compute Engine paths gcloud asks for
// (docs/gcloud-verified.md). Each worker's network namespace runs a metadata server at
// 169.254.169.254 that gives its VM's TPU worker number, as on Compute Engine TPU VMs. What is
// checked: the workers in TPU worker order whatever the instance names' order (numbers from the
// VMs themselves when the API does not show them, remembered in the cache, and from the API when
// it does); exec and launch on a MIG, with the environment of a TPU VM pod; two MIGs as one
// multislice job with MEGASCALE_*; an instance not RUNNING refused naming it and its state.
// Then MIG slices podrun makes (`up`, `down`, `create:`; the stand-in gives a created group's
// TPU worker K the pool address of testpod worker K and publishes that worker's host keys): a
// Spot slice made and unmade with nothing left; a slice whose API does not show the worker
// numbers, its VMs' published keys pinned by name before anything connects (--strict-host-keys
// works) and a VM answering with another key than it publishes refused naming both; a
// multislice job under a keeper whose one Spot VM is preempted (the VM rebooted with a new host
// key), the keeper SIGKILLed while it deletes the slice and the next keeper remaking it as a
// whole, the other left alone, and the job resumed from its checkpoint; a standard slice Compute
// Engine repairs, waited for and said in status, the gang restarted without remaking anything;
// a keeper SIGKILLed while the old group is DELETING, then while the new one is CREATING, each
// recreation finished by the next keeper (one create, one preemption, the intent closed, the
// keys pinned). Waits are on events (the stand-in's state and counters, `status --json`), and
// only this test's own processes (by their PODRUN_HOME) are counted or signalled.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 36;
constexpr char kZone[] = "us-central1-a";
constexpr char kProject[] = "my-proj";
// The VMs' TPU worker numbers: testpod worker i is TPU worker kNumber[i], and its instance name
// is kInstance[i] (whose sorted order is neither).
constexpr int kNumber[kWorkers] = {2, 0, 3, 1};
const char* const kInstance[kWorkers] = {"slice-1-aaaa", "slice-1-dddd", "slice-1-bbbb",
                                         "slice-1-cccc"};

std::string Dir() { return ::testing::TempDir() + "/podrun-mig-test"; }
// Shared by every worker (each has its own /tmp and home, not /var/tmp): the checkpoints.
std::string Shared() { return "/var/tmp/podrun-mig-test-" + std::to_string(::getpid()); }

class MigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir() + " " + Shared());
    std::filesystem::create_directories(Dir() + "/gcloud-config");
    std::filesystem::create_directories(Shared() + "/ckpt");
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
    StartMetadataServers();
    StartApi();
  }
  static void TearDownTestSuite() {
    KillKeepers();
    if (api_pid_ > 0) RunCommand("kill " + std::to_string(api_pid_));
    RunCommand("rm -rf " + Shared());
    pod_.reset();  // ends the metadata servers with the pod's processes
  }

  // A metadata server in each worker's network namespace, answering agent-worker-number.
  static void StartMetadataServers() {
    for (int i = 0; i < kWorkers; ++i) {
      CommandResult up = pod_->StartMetadataServer(i, kNumber[i]);
      ASSERT_EQ(0, up.exit_code) << up.output;
      ASSERT_EQ(std::to_string(kNumber[i]), up.output);
    }
  }

  // An instance of a MIG for testpod worker i: reached at its address, reaching the others by
  // its name (the workers' /etc/hosts and the pod's ssh_config know it).
  static std::string Instance(const std::string& name, int i, const std::string& extra = "") {
    return R"({"name": ")" + name + R"(", "address": ")" + pod_->address(i) +
           R"(", "internalIp": ")" + pod_->name(i) + "\"" + extra + "}";
  }

  static void StartApi() {
    std::string slice1;
    for (int i = 0; i < kWorkers; ++i) {
      slice1 += (i ? ", " : "") + Instance(kInstance[i], i);
    }
    // Two slices whose API shows the worker numbers (agent-worker-number in the instances'
    // metadata), in another order than the instances are listed.
    const std::string slice_a = Instance("slice-a-zz", 1, R"(, "workerNumber": 1)") + ", " +
                                Instance("slice-a-yy", 3, R"(, "workerNumber": 0)");
    const std::string slice_b = Instance("slice-b-xx", 0, R"(, "workerNumber": 1)") + ", " +
                                Instance("slice-b-ww", 2, R"(, "workerNumber": 0)");
    const std::string bad =
        Instance("slice-bad-qq", 0) + ", " +
        Instance("slice-bad-pp", 1, R"(, "status": "STOPPING", "currentAction": "RECREATING")");
    const std::string z = kZone;
    std::ofstream(Dir() + "/api.json")
        << R"({"project": ")" << kProject << R"(", "migs": [)"
        << R"({"name": "slice-1", "zone": ")" << z << R"(", "instances": [)" << slice1 << "]}, "
        << R"({"name": "slice-a", "zone": ")" << z << R"(", "apiWorkerNumbers": true, )"
        << R"("instances": [)" << slice_a << "]}, "
        << R"({"name": "slice-b", "zone": ")" << z << R"(", "apiWorkerNumbers": true, )"
        << R"("instances": [)" << slice_b << "]}, "
        << R"({"name": "slice-bad", "zone": ")" << z << R"(", "instances": [)" << bad
        << "]}], "
        // A Cloud TPU node of testpod workers 0 and 1, for the TPU API's reads.
        << R"("nodes": [{"name": "node-t", "zone": ")" << z << R"(", "workers": [{"address": ")"
        << pod_->address(0) << R"("}, {"address": ")" << pod_->address(1) << R"("}]}]})";
    std::ofstream(Dir() + "/token") << "fake-token\n";
    // The pool of created groups: testpod worker K is the K-th address, its keys published.
    std::ofstream pool(Dir() + "/pool");
    for (int i = 0; i < kWorkers; ++i) pool << pod_->address(i) << "\n";
    pool.close();
    const CommandResult started = RunCommand(
        "cd " + Dir() + " && (setsid " + std::string(PODRUN_SOURCE_DIR) +
        "/scripts/fake-tpu-api --spec api.json --workers @pool --host-keys-dir " + pod_->dir() +
        " --create-seconds 2 --delete-seconds 1 --verbose > port 2> api.log & echo $! > pid) && "
        "for t in $(seq 100); do [ -s port ] && break; sleep 0.1; done; cat pid; head -1 port");
    ASSERT_EQ(0, started.exit_code) << started.output;
    const std::string out = started.output;
    api_pid_ = std::stoi(out);
    port_ = std::stoi(out.substr(out.find('\n') + 1));
  }

  // podrun with the real gcloud pointed at the stand-in.
  static std::string Podrun(const std::string& home = "home") {
    const std::string api = "http://127.0.0.1:" + std::to_string(port_);
    return "env PODRUN_HOME=" + Dir() + "/" + home +
           " PODRUN_TPU_POLL_SECONDS=1 PODRUN_HOST_KEYS_WAIT_SECONDS=20 CLOUDSDK_CONFIG=" + Dir() +
           "/gcloud-config CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=" + api +
           "/compute/v1/ CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=" + api +
           "/ CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=" + Dir() +
           "/token CLOUDSDK_CORE_DISABLE_PROMPTS=1 " + std::string(PODRUN_BINARY);
  }
  static std::string Pod(const std::string& migs) {
    return " --mig " + migs + " --zone " + kZone + " --project " + kProject + " -i " +
           pod_->identity() + " --known-hosts " + pod_->known_hosts();
  }
  // How many requests of the stand-in's log match `pattern` (grep -E): podrun's own reads lack
  // gcloud's `alt=json`.
  static int Requests(const std::string& pattern) {
    return std::stoi(RunCommand("grep -cE '" + pattern + "' " + Dir() + "/api.log || true").output);
  }
  // How many times gcloud listed a group's instances.
  static int Lists() {
    return std::stoi(
        RunCommand("grep -c '\"POST .*listManagedInstances' " + Dir() + "/api.log || true").output);
  }

  // The stand-in's test-only admin requests (scripts/fake-tpu-api's header).
  static nlohmann::json Admin(const std::string& method, const std::string& what) {
    const CommandResult r =
        RunCommand("curl -sf -X " + method + " 'http://127.0.0.1:" + std::to_string(port_) +
                       "/fake/admin/" + what + "'",
                   false);
    return nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  }
  // How many requests of an API method the stand-in had, e.g. "instanceGroupManagers.insert".
  static int Calls(const std::string& method) {
    const nlohmann::json calls = Admin("GET", "calls");
    return calls.is_object() && calls.contains(method) ? calls[method].get<int>() : 0;
  }
  // What the stand-in holds of slice `mig`: its group, template and policy.
  static std::string Made(const std::string& mig) {
    const nlohmann::json state = Admin("GET", "state");
    std::string out;
    for (const char* part : {"migs", "templates", "policies"}) {
      if (!state.contains(part)) continue;
      for (const auto& [name, value] : state[part].items()) {
        if (name.find(mig) != std::string::npos) out += std::string(part) + ":" + name + " ";
      }
    }
    return out;
  }
  static nlohmann::json Status(const std::string& home, const std::string& job) {
    return nlohmann::json::parse(
        RunCommand(Podrun(home) + " status " + job + " --json", false).output, nullptr,
        /*allow_exceptions=*/false);
  }
  // Ends the keepers of this test's jobs: the processes of its own homes, no other.
  static void KillKeepers() {
    for (const char* home : {"home-ckpt", "home-repair", "home-phases"}) {
      for (pid_t keeper : PodrunProcesses("podrun watch ", Dir() + "/" + home)) {
        ::kill(keeper, SIGTERM);
      }
    }
  }
  // The current action of each VM of group `mig` as the stand-in holds it ("CREATING",
  // "DELETING", "NONE", ...; none once the group is gone), e.g. "CREATING CREATING ".
  static std::string GroupActions(const std::string& mig) {
    const nlohmann::json state = Admin("GET", "state");
    const std::string key = std::string(kZone) + "/" + mig;
    std::string out;
    if (!state.is_object() || !state.contains("migsNow") || !state["migsNow"].contains(key)) {
      return out;
    }
    for (const auto& vm : state["migsNow"][key]) {
      out += vm.value("currentAction", std::string("?")) + " ";
    }
    return out;
  }
  // From now on, the VM at `address` publishes `key` ("TYPE BASE64"; "": its own keys again).
  static void PublishKey(const std::string& address, const std::string& key) {
    const CommandResult r = RunCommand(
        "curl -sf -X POST -G --data-urlencode " + ShellQuote("host_key=" + address + " " + key) +
        " 'http://127.0.0.1:" + std::to_string(port_) + "/fake/admin/config'");
    ASSERT_EQ(0, r.exit_code) << r.output;
  }
  // A spec of MIG slices `migs` that podrun makes with `create`, then `rest`.
  static std::string WriteSpec(const std::string& name, const std::string& migs,
                               const std::string& create, const std::string& rest) {
    const std::string path = Dir() + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\npod:\n  mig: " << migs << "\n  zone: " << kZone
                        << "\n  project: " << kProject
                        << "\n  user: root\n  identity: " << pod_->identity()
                        << "\n  known_hosts: " << Dir() << "/known_hosts-" << name
                        << "\n  create: {image_family: fam, image_project: imgs, " << create
                        << "}\n"
                        << rest;
    return path;
  }
  // A VM preempted or repaired for real: every process of testpod worker i killed; with
  // `new_key`, it comes back with a new host key, as a new VM would.
  static void Reboot(int i, bool new_key) {
    if (new_key) {
      const std::string key = pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key";
      RunCommand("rm -f " + key + " " + key + ".pub && ssh-keygen -q -t ed25519 -N '' -f " + key +
                 " < /dev/null");
    }
    pod_->Reboot(i);
    if (new_key) {
      // The other tests of this file connect with the testpod's own known_hosts.
      RunCommand("ssh-keygen -R " + pod_->address(i) + " -f " + pod_->known_hosts() +
                 " >/dev/null 2>&1; echo \"" + pod_->address(i) + " $(cut -d' ' -f1,2 " +
                 pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key.pub)\" >> " +
                 pod_->known_hosts());
    }
  }

  static std::unique_ptr<TestPod> pod_;
  static int api_pid_;
  static int port_;
};

std::unique_ptr<TestPod> MigTest::pod_;
int MigTest::api_pid_ = 0;
int MigTest::port_ = 0;

TEST_F(MigTest, WorkersAreInTpuWorkerOrderNotInstanceNameOrder) {
  const std::string exec = Podrun() + " exec" + Pod("slice-1") + " -- 'echo $(hostname)'";
  CommandResult r = RunCommand(exec);
  ASSERT_EQ(0, r.exit_code) << r.output;
  // Rank K is the VM whose TPU worker number is K: testpod workers w1, w3, w0, w2.
  EXPECT_NE(std::string::npos, r.output.find("[w0] w1")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] w3")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w2] w0")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w3] w2")) << r.output;
  // Cached with the numbers the VMs gave: the next command asks gcloud nothing, in the same
  // order; --refresh asks again.
  const int lists = Lists();
  EXPECT_GE(lists, 1);
  r = RunCommand(exec);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w2] w0")) << r.output;
  EXPECT_EQ(lists, Lists());
  r = RunCommand(Podrun() + " exec --refresh" + Pod("slice-1") + " -- 'echo $(hostname)'");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w3] w2")) << r.output;
  EXPECT_EQ(lists + 1, Lists());
}

TEST_F(MigTest, ATpuNodeIsReadThroughTheTpuApiWithTheRealGcloudsToken) {
  CommandResult r = RunCommand(Podrun() + " exec --tpu node-t --zone " + kZone + " --project " +
                               kProject + " -i " + pod_->identity() + " --known-hosts " +
                               pod_->known_hosts() + " -- 'echo $(hostname)'");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] w0")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] w1")) << r.output;
  // Described by podrun itself (no gcloud's alt=json), with config-helper's token.
  EXPECT_EQ(1, Requests("\"GET /v2/projects/my-proj/locations/us-central1-a/nodes/node-t HTTP"));
  EXPECT_EQ(0, Requests("nodes/node-t\\?alt=json"));
}

TEST_F(MigTest, LaunchOnAMigSliceGetsTheEnvironmentOfATpuVmPod) {
  const std::string spec = Dir() + "/mig.yaml";
  std::ofstream(spec) << "name: mig-job\npod:\n  mig: slice-1\n  zone: " << kZone
                      << "\n  project: " << kProject
                      << "\nrun: echo \"rank $PODRUN_WORKER_ID on $(hostname) of "
                         "$PODRUN_NUM_WORKERS hosts $PODRUN_WORKER_HOSTS tpu "
                         "${TPU_WORKER_ID:-unset} slices ${MEGASCALE_NUM_SLICES:-none}\"\n";
  CommandResult r = RunCommand(Podrun("home-launch") + " launch " + spec + " -i " +
                               pod_->identity() + " --known-hosts " + pod_->known_hosts());
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("[w0] rank 0 on w1 of 4 hosts w1,w3,w0,w2 tpu unset slices none"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w2] rank 2 on w0 of 4")) << r.output;
  // The job record keeps the pod (the MIG, and each rank's VM): logs and status reach the same
  // workers without gcloud.
  const int lists = Lists();
  CommandResult logs = RunCommand(Podrun("home-launch") + " logs mig-job");
  EXPECT_EQ(0, logs.exit_code) << logs.output;
  EXPECT_NE(std::string::npos, logs.output.find("[w3] rank 3 on w2")) << logs.output;
  CommandResult status = RunCommand(Podrun("home-launch") + " status mig-job");
  EXPECT_EQ(0, status.exit_code) << status.output;
  EXPECT_NE(std::string::npos, status.output.find(pod_->address(1))) << status.output;
  EXPECT_EQ(lists, Lists());
}

TEST_F(MigTest, TwoMigsRunAsOneMultisliceJobWithNumbersFromTheApi) {
  const std::string spec = Dir() + "/multi.yaml";
  std::ofstream(spec) << "name: multi\nrun: echo \"rank $PODRUN_WORKER_ID on $(hostname) slice "
                         "$MEGASCALE_SLICE_ID of $MEGASCALE_NUM_SLICES at "
                         "$MEGASCALE_COORDINATOR_ADDRESS\"\n";
  CommandResult r = RunCommand(Podrun("home-multi") + " launch " + spec + Pod("slice-a,slice-b"));
  ASSERT_EQ(0, r.exit_code) << r.output;
  // slice-a: TPU worker 0 is w3, 1 is w1; slice-b: 0 is w2, 1 is w0.
  EXPECT_NE(std::string::npos, r.output.find("[w0] rank 0 on w3 slice 0 of 2 at w3:8081"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] rank 1 on w1 slice 0 of 2")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w2] rank 2 on w2 slice 1 of 2")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w3] rank 3 on w0 slice 1 of 2")) << r.output;
}

TEST_F(MigTest, AnInstanceNotRunningIsRefusedNamingItAndItsState) {
  CommandResult r = RunCommand(Podrun() + " exec" + Pod("slice-bad") + " -- true");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("mig slice-bad: instance slice-bad-pp is STOPPING (action RECREATING), "
                          "not RUNNING: nothing was started"))
      << r.output;
  // A group that does not exist, named.
  r = RunCommand(Podrun() + " exec" + Pod("slice-none") + " -- true");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("slice-none")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("was not found")) << r.output;
}

TEST_F(MigTest, UpMakesASpotSliceAndDownLeavesNothing) {
  const std::string known = Dir() + "/known_hosts-up";
  const std::string where =
      std::string(" --mig made-1 --zone ") + kZone + " --project " + kProject + " -y";
  CommandResult r = RunCommand(Podrun() + " up" + where + " --known-hosts " + known +
                               " --machine-type tpu7x-standard-4t --topology 2x2x4 "
                               "--image-family fam --image-project imgs --provisioning spot");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("is RUNNING: 4 workers (w0 " + pod_->address(0)))
      << r.output;
  auto made = [] { return Made("made-1"); };
  EXPECT_EQ("migs:us-central1-a/made-1 templates:made-1-podrun policies:us-central1/made-1-podrun ",
            made());
  const int inserts = Calls("instanceGroupManagers.insert");
  // The VMs' keys were read by podrun itself through the API with the real gcloud's token
  // (config-helper), every VM once at least, none by a gcloud per VM.
  EXPECT_GE(Requests("\"GET /compute/v1/projects/[^ ]*/instances/made-1-[a-z0-9]+/"
                     "getGuestAttributes\\?queryPath=hostkeys%2F HTTP"),
            4);
  EXPECT_EQ(0, Requests("getGuestAttributes\\?alt=json"));
  // The VMs' published keys are pinned: exec on the slice connects strictly with them alone.
  const std::string pinned = ReadTextFile(known);
  EXPECT_EQ(4, std::count(pinned.begin(), pinned.end(), '\n')) << pinned;
  EXPECT_NE(std::string::npos, pinned.find("podrun-pin:published-by-the-vm")) << pinned;
  r = RunCommand(Podrun() + " exec --mig made-1 --zone " + kZone + " --project " + kProject +
                 " -i " + pod_->identity() + " --known-hosts " + known + " -- hostname");
  ASSERT_EQ(0, r.exit_code) << r.output;
  for (int k = 0; k < kWorkers; ++k) {
    EXPECT_NE(std::string::npos,
              r.output.find("[w" + std::to_string(k) + "] w" + std::to_string(k)))
        << r.output;
  }
  // up again: used as it is, nothing made.
  r = RunCommand(Podrun() + " up" + where + " --known-hosts " + known +
                 " --machine-type tpu7x-standard-4t --topology 2x2x4 "
                 "--image-family fam --image-project imgs --provisioning spot");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("it existed: used as it is")) << r.output;
  EXPECT_EQ(inserts, Calls("instanceGroupManagers.insert"));
  r = RunCommand(Podrun() + " down" + where);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("", made()) << Admin("GET", "state").dump();
  r = RunCommand(Podrun() + " down" + where);
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("does not exist: nothing to delete")) << r.output;
}

// The SHA256 fingerprint of a public key file: "SHA256:...".
std::string Fingerprint(const std::string& pub) {
  std::smatch m;
  const std::string out = RunCommand("ssh-keygen -lf " + pub).output;
  return std::regex_search(out, m, std::regex("SHA256:[A-Za-z0-9+/]+")) ? m[0].str() : "";
}
// "TYPE BASE64" of a public key file.
std::string KeyOf(const std::string& pub) {
  const std::string key = RunCommand("cut -d' ' -f1,2 " + pub, false).output;
  return key.substr(0, key.find('\n'));
}

// A Spot slice podrun makes whose API does not show the VMs' TPU worker numbers (the VMs are
// asked them over SSH, through their agents): the keys each VM publishes are pinned to that
// VM's own address, by name, before anything connects to it. So a --strict-host-keys launch runs
// on the new slice (the stale keys of its addresses forgotten), and a VM that answers with
// another key than the one it publishes is refused, naming both fingerprints, nothing started.
TEST_F(MigTest, ASliceWithoutApiWorkerNumbersIsPinnedByNameAndItsImpostorIsRefusedNamingBoth) {
  ASSERT_TRUE(Admin("POST", "config?api_worker_numbers=0").is_object());
  const std::string stale = Dir() + "/stale_key";
  const std::string impostor = Dir() + "/impostor_key";
  RunCommand("rm -f " + stale + "* " + impostor + "* && ssh-keygen -q -t ed25519 -N '' -f " +
             stale + " < /dev/null && ssh-keygen -q -t ed25519 -N '' -f " + impostor +
             " < /dev/null");
  ASSERT_NE("", Fingerprint(stale + ".pub"));
  ASSERT_NE("", Fingerprint(impostor + ".pub"));
  // Each spec's known_hosts holds a stale key (of VMs gone) for every address of the pool.
  auto stale_known_hosts = [&](const std::string& name) {
    std::ofstream out(Dir() + "/known_hosts-" + name);
    for (int i = 0; i < kWorkers; ++i)
      out << pod_->address(i) << " " << KeyOf(stale + ".pub") << "\n";
  };
  const std::string slice = "machine_type: tpu7x-standard-4t, topology: 2x2x4, spot: true";
  stale_known_hosts("strict");
  const std::string strict = WriteSpec("strict", "nonum-1", slice,
                                       "run: echo \"rank $PODRUN_WORKER_ID on $(hostname)\"\n");
  CommandResult r = RunCommand(Podrun("home-nonum") + " launch " + strict + " --strict-host-keys");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("pinned the host keys its 4 of 4 workers publish as guest attributes"))
      << r.output;
  // In the order the VMs' own metadata gives (testpod worker i is TPU worker kNumber[i]).
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(std::string::npos,
              r.output.find("[w" + std::to_string(kNumber[i]) + "] rank " +
                            std::to_string(kNumber[i]) + " on w" + std::to_string(i)))
        << r.output;
  }
  const std::string pinned = ReadTextFile(Dir() + "/known_hosts-strict");
  EXPECT_EQ(std::string::npos, pinned.find(KeyOf(stale + ".pub"))) << pinned;
  for (int i = 0; i < kWorkers; ++i) {
    const std::string own = pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key.pub";
    EXPECT_NE(std::string::npos,
              pinned.find(pod_->address(i) + " " + KeyOf(own) + " podrun-pin:published-by-the-vm"))
        << pinned;
  }
  r = RunCommand(Podrun("home-nonum") + " down " + strict + " -y");
  EXPECT_EQ(0, r.exit_code) << r.output;

  // The VM at testpod w1's address publishes the impostor's key: the machine answering there
  // (w1's sshd, with its own key) is not that VM.
  PublishKey(pod_->address(1), KeyOf(impostor + ".pub"));
  stale_known_hosts("impostor");
  const std::string spec = WriteSpec("impostor", "nonum-2", slice, "run: echo should not run\n");
  r = RunCommand(Podrun("home-nonum") + " launch " + spec);
  PublishKey(pod_->address(1), "");
  Admin("POST", "config?api_worker_numbers=1");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("HOST KEY CHANGED for " + pod_->address(1)))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("pins ssh-ed25519 " + Fingerprint(impostor + ".pub") +
                                             ", the key the VM at this address published"))
      << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("now offers ssh-ed25519 " +
                          Fingerprint(pod_->dir() + "/w1/ssh_host_ed25519_key.pub")))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("not that VM")) << r.output;
  // Only that VM is refused: the others' published keys were pinned, the stale ones forgotten.
  EXPECT_EQ(std::string::npos, r.output.find(Fingerprint(stale + ".pub"))) << r.output;
  for (int i : {0, 2, 3}) {
    EXPECT_EQ(std::string::npos, r.output.find("HOST KEY CHANGED for " + pod_->address(i)))
        << r.output;
  }
  EXPECT_EQ(std::string::npos, r.output.find("ssh-keygen -R")) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("should not run")) << r.output;
  r = RunCommand(Podrun("home-nonum") + " down " + spec + " -y");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("", Made("nonum-")) << Admin("GET", "state").dump();
}

TEST_F(MigTest, AStockoutIsWaitedOutUntilCapacityWaitAndCtrlCLeavesNothing) {
  // 8 VMs from a pool of 4: Compute Engine keeps trying, the instances carry
  // ZONE_RESOURCE_POOL_EXHAUSTED.
  const std::string big = std::string(" --zone ") + kZone + " --project " + kProject +
                          " --machine-type tpu7x-standard-4t --topology 4x8 --image-family fam "
                          "--image-project imgs --provisioning spot -y --known-hosts " +
                          Dir() + "/known_hosts-big";
  CommandResult r = RunCommand(Podrun() + " up --mig big-1 --capacity-wait 5s" + big);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("no capacity in us-central1-a: gave up after waiting"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("ZONE_RESOURCE_POOL_EXHAUSTED")) << r.output;
  EXPECT_EQ("", Made("big-1")) << r.output;
  // Ctrl-C (SIGINT to the foreground group) while it waits: what was made goes, exit 130.
  const std::string output = Dir() + "/up-big-2.out";
  const pid_t up = StartInOwnGroup(Podrun() + " up --mig big-2" + big, output);
  ASSERT_GT(up, 0);
  ASSERT_TRUE(WaitUntil([] { return Made("big-2").find("migs:") != std::string::npos; },
                        std::chrono::seconds(60)))
      << ReadTextFile(output);
  ASSERT_EQ(0, ::kill(-up, SIGINT));
  int status = 0;
  ASSERT_EQ(up, ::waitpid(up, &status, 0));
  ASSERT_TRUE(WIFEXITED(status)) << ReadTextFile(output);
  EXPECT_EQ(130, WEXITSTATUS(status)) << ReadTextFile(output);
  EXPECT_EQ("", Made("big-2")) << ReadTextFile(output);
}

// A stockout in the spec's zone: the slice is made in its fallback zone at once (no backoff), the
// job runs there, and `down SPEC` deletes it where it lives.
TEST_F(MigTest, AStockoutInTheZoneMakesTheSliceInAFallbackZoneWhereItRunsAndDownDeletesIt) {
  constexpr char kFallback[] = "us-central1-b";
  ASSERT_TRUE(Admin("POST", std::string("config?stockout_zones=") + kZone).is_object());
  const std::string spec = WriteSpec(
      "moved", "moved-1",
      std::string("machine_type: tpu7x-standard-4t, topology: 2x4, spot: true, fallback_zones: [") +
          kFallback + "]",
      "run: echo \"ran on $(hostname)\"\n");
  CommandResult up = RunCommand(Podrun() + " up " + spec + " -y");
  // None again (`,`: a blank value would be no value), for the tests after this one.
  ASSERT_EQ(nlohmann::json::array(),
            Admin("POST", "config?stockout_zones=,").value("stockout_zones", nlohmann::json()));
  ASSERT_EQ(0, up.exit_code) << up.output;
  // The group made there shows the stockout on its instances: it goes, the next zone is asked.
  EXPECT_TRUE(std::regex_search(
      up.output,
      std::regex(std::string("no capacity in ") + kZone +
                 R"( \(ZONE_RESOURCE_POOL_EXHAUSTED.*: deleting what was made, trying )" +
                 kFallback)))
      << up.output;
  EXPECT_EQ(std::string::npos, up.output.find("trying again in")) << up.output;  // no backoff
  nlohmann::json state = Admin("GET", "state");
  ASSERT_TRUE(state.contains("migsNow")) << state.dump();
  EXPECT_TRUE(state["migsNow"].contains(std::string(kFallback) + "/moved-1")) << state.dump();
  EXPECT_FALSE(state["migsNow"].contains(std::string(kZone) + "/moved-1")) << state.dump();

  CommandResult launch = RunCommand(Podrun() + " launch " + spec);
  EXPECT_EQ(0, launch.exit_code) << launch.output;
  EXPECT_NE(std::string::npos, launch.output.find("] ran on w")) << launch.output;

  CommandResult down = RunCommand(Podrun() + " down " + spec + " -y");
  EXPECT_EQ(0, down.exit_code) << down.output;
  EXPECT_NE(std::string::npos, down.output.find(std::string("mig moved-1 (zone ") + kFallback))
      << down.output;
  EXPECT_TRUE(WaitUntil([] { return Made("moved-1").empty(); }, std::chrono::seconds(30)))
      << Made("moved-1");
  state = Admin("GET", "state");
  EXPECT_FALSE(state["migsNow"].contains(std::string(kFallback) + "/moved-1")) << state.dump();
}

TEST_F(MigTest, APreemptedSpotVmRemakesItsSliceAndTheJobResumesFromItsCheckpoint) {
  // Two Spot slices of 2 VMs (8 chips of 4 a VM): ms-a on testpod w0, w1; ms-b on w2, w3.
  const std::string ckpt = Shared() + "/ckpt";
  const std::string spec =
      WriteSpec("ckpt", "ms-a,ms-b", "machine_type: tpu7x-standard-4t, topology: 2x4, spot: true",
                "restarts: 2\nworkdir: ~/ckpt-example\nsync: " + std::string(PODRUN_SOURCE_DIR) +
                    "/examples/checkpointing\nmounts:\n  - {type: bind, source: " + ckpt +
                    ", path: /mnt/ckpt}\nenv: {CHECKPOINT_DIR: /mnt/ckpt, DIST_TIMEOUT: '20'}\n"
                    "run: exec /usr/bin/python3 -u train.py --steps 40 --checkpoint-every 4 "
                    "--step-seconds 0.2\n");
  const int inserts = Calls("instanceGroupManagers.insert");
  const int deletes = Calls("instanceGroupManagers.delete");
  CommandResult r =
      RunCommand("setsid " + Podrun("home-ckpt") + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  const std::string job = "ckpt";
  const std::string keeper_log = Dir() + "/home-ckpt/jobs/";
  auto log = [&] { return RunCommand("cat " + keeper_log + "*/keeper.log", false).output; };
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(ckpt + "/latest"); },
                        std::chrono::seconds(120)))
      << log();
  const std::string ms_a_keys_before =
      RunCommand("grep -F '" + pod_->address(0) + " ' " + Dir() + "/known_hosts-ckpt", false)
          .output;
  // ms-b's TPU worker 0 (testpod w2) is preempted: a new VM, a new host key. Deletes take 3 s
  // now: long enough to SIGKILL the keeper in the middle of the one that remakes the slice.
  const int keeper = Status("home-ckpt", job)["keeper"]["pid"].get<int>();
  ASSERT_TRUE(Admin("POST", "config?delete_seconds=3").is_object());
  const nlohmann::json preempted =
      Admin("POST", std::string("preempt?zone=") + kZone + "&mig=ms-b");
  ASSERT_TRUE(preempted.is_object()) << preempted.dump();
  Reboot(2, /*new_key=*/true);
  ASSERT_TRUE(WaitUntil([&] { return Calls("instanceGroupManagers.delete") > deletes; },
                        std::chrono::seconds(60)))
      << log();
  ASSERT_EQ(0, ::kill(keeper, SIGKILL));
  // The group goes (the delete was asked); with its keeper dead, nobody makes it again.
  ASSERT_TRUE(WaitUntil([] { return GroupActions("ms-b").empty(); }, std::chrono::seconds(60)))
      << GroupActions("ms-b") << log();
  EXPECT_EQ(inserts + 2, Calls("instanceGroupManagers.insert"));
  Admin("POST", "config?delete_seconds=1");
  // The next keeper finds podrun's own recreation half done, and finishes it.
  r = RunCommand(Podrun("home-ckpt") + " watch " + job);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ASSERT_TRUE(WaitUntil(
      [&] {
        const nlohmann::json s = Status("home-ckpt", job);
        return s.is_object() && s["attempt"]["state"] == "succeeded";
      },
      std::chrono::seconds(180)))
      << log() << Status("home-ckpt", job).dump();
  const nlohmann::json status = Status("home-ckpt", job);
  EXPECT_EQ(2, status["attempt"]["number"]) << status.dump();
  EXPECT_EQ("preemption", status["attempt"]["resumed_from"]) << status.dump();
  ASSERT_EQ(1u, status["preemptions"].size()) << status.dump();
  EXPECT_EQ("ms-b", status["preemptions"][0]["node"]) << status.dump();
  EXPECT_EQ("TERMINATED", status["preemptions"][0]["state"]) << status.dump();
  EXPECT_TRUE(status["preemptions"][0]["recreated"].get<bool>()) << status.dump();
  EXPECT_FALSE(status["preemptions"][0]["back"].is_null()) << status.dump();  // one, ended
  std::printf("MIG slice preempted: lost %.1f s\n",
              status["preemptions"][0]["lost_seconds"].get<double>());
  // The slice was remade as a whole, the other left alone: ms-a, ms-b, then ms-b again; its
  // delete asked by the first keeper only: the next finished that recreation from where it was
  // (the group still DELETING, or gone), never deleting twice.
  EXPECT_EQ(inserts + 3, Calls("instanceGroupManagers.insert"));
  EXPECT_EQ(deletes + 1, Calls("instanceGroupManagers.delete"));
  EXPECT_NE(std::string::npos, log().find("finishing the recreation podrun began")) << log();
  // w2's new key pinned from what the new VM published; ms-a's keys untouched.
  const std::string new_key =
      RunCommand("cut -d' ' -f2 " + pod_->dir() + "/w2/ssh_host_ed25519_key.pub", false).output;
  const std::string known = ReadTextFile(Dir() + "/known_hosts-ckpt");
  EXPECT_NE(std::string::npos, known.find(new_key.substr(0, new_key.size() - 1))) << known;
  EXPECT_EQ(ms_a_keys_before,
            RunCommand("grep -F '" + pod_->address(0) + " ' " + Dir() + "/known_hosts-ckpt", false)
                .output);
  // Resumed from its checkpoint.
  r = RunCommand(Podrun("home-ckpt") + " logs " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("attempt 2 (resumed from: preemption)")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("loaded ckpt-")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("final weights sha256:")) << r.output;
  // down of a multislice spec deletes every slice it names.
  r = RunCommand(Podrun("home-ckpt") + " down " + spec + " -y");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("mig ms-a (zone")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("mig ms-b (zone")) << r.output;
}

TEST_F(MigTest, ARepairingGroupIsWaitedForAndSaidThenTheGangRestarts) {
  const std::string flag = "/tmp/podrun-mig-repair-started";
  const std::string spec =
      WriteSpec("repair", "rep-1", "machine_type: ct6e-standard-4t, topology: 4x4",
                "restarts: 1\nrun: |\n  if [ \"$PODRUN_ATTEMPT\" = 1 ]; then touch " + flag +
                    "; sleep 600; fi\n  echo \"attempt $PODRUN_ATTEMPT on $(hostname)\"\n");
  const int deletes = Calls("instanceGroupManagers.delete");
  CommandResult r;
  std::thread launch([&] { r = RunCommand(Podrun("home-repair") + " launch " + spec); });
  const bool started = WaitUntil(
      [&] {
        for (int i = 0; i < kWorkers; ++i) {
          if (pod_->Exec(i, "test -e " + flag).exit_code != 0) return false;
        }
        return true;
      },
      std::chrono::seconds(120));
  if (started) {
    // Compute Engine repairs the slice (every VM of it, as a whole): w1 really restarts. The
    // repair lasts until status has said it (an event, not a time that a loaded machine outruns).
    Admin("POST", std::string("repair?zone=") + kZone + "&mig=rep-1&seconds=600");
    Reboot(1, /*new_key=*/false);
    bool said = false;
    WaitUntil(
        [&] {
          const nlohmann::json s = Status("home-repair", "repair");
          said = s.is_object() && s.dump().find("MIG rep-1 repairing") != std::string::npos;
          return said;
        },
        std::chrono::seconds(120));
    EXPECT_TRUE(said) << Status("home-repair", "repair").dump();
    // The repair is over: every VM RUNNING at its address again, the group stable.
    Admin("POST", std::string("repair?zone=") + kZone + "&mig=rep-1&seconds=0");
  } else {  // Ctrl-C to this test's launch: it deletes what it made
    for (pid_t launch :
         PodrunProcesses(std::string(PODRUN_BINARY) + " launch " + spec, Dir() + "/home-repair")) {
      ::kill(launch, SIGINT);
    }
  }
  launch.join();
  ASSERT_TRUE(started) << r.output;
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] attempt 2 on w1")) << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("waiting for the pod to be READY again: MIG slice rep-1 is repairing"))
      << r.output;
  EXPECT_EQ(deletes, Calls("instanceGroupManagers.delete")) << r.output;  // nothing remade
  // A rerun reaches the same VMs from the job record.
  r = RunCommand(Podrun("home-repair") + " rerun repair");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w3] attempt 3 on w3")) << r.output;
  r = RunCommand(Podrun("home-repair") + " down " + spec + " -y");
  EXPECT_EQ(0, r.exit_code) << r.output;
}

// A keeper SIGKILLed while the preempted slice's old group is DELETING, then (at the next
// preemption) while its new group is CREATING: each time `podrun watch` starts a keeper that
// finishes that recreation: the group made once, one preemption record (over), the recreation
// intent closed, the old host keys forgotten and the new VMs' pinned, the job running again.
TEST_F(MigTest, AKeeperKilledWhileTheOldGroupDeletesOrTheNewOneCreatesIsFinishedByTheNext) {
  // Slow enough that the keeper dies in the middle of either.
  ASSERT_TRUE(
      Admin("POST", "config?delete_seconds=6&create_seconds=6&api_worker_numbers=1").is_object());
  const std::string home = "home-phases";
  const std::string job = "phases";
  const std::string known_hosts = Dir() + "/known_hosts-phases";
  // One Spot slice of 2 VMs: testpod w0 and w1 (the pool's first free addresses).
  const std::string spec =
      WriteSpec(job, "ph-1", "machine_type: tpu7x-standard-4t, topology: 2x4, spot: true",
                "run: |\n  echo \"attempt $PODRUN_ATTEMPT on $(hostname)\"\n  sleep 300\n");
  CommandResult r = RunCommand("setsid " + Podrun(home) + " launch -d " + spec + " < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;  // restarts: 0: pod.create alone starts a keeper
  auto log = [&] {
    return RunCommand("cat " + Dir() + "/" + home + "/jobs/*/keeper.log", false).output;
  };
  auto db = [&](const std::string& sql) {
    return RunCommand("sqlite3 -readonly " + Dir() + "/" + home + "/podrun.db " + ShellQuote(sql),
                      false)
        .output;
  };
  auto own_key = [&](int i) {
    return KeyOf(pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key.pub");
  };
  for (const std::string phase : {"DELETING", "CREATING"}) {
    int attempt = 0;
    int keeper = 0;
    ASSERT_TRUE(WaitUntil(
        [&] {
          const nlohmann::json s = Status(home, job);
          if (!s.is_object() || s["keeper"].is_null() || s["keeper"]["state"] != "running" ||
              s["attempt"]["state"] != "running") {
            return false;
          }
          attempt = s["attempt"]["number"].get<int>();
          keeper = s["keeper"]["pid"].get<int>();
          return true;
        },
        std::chrono::seconds(60)))
        << phase << " " << Status(home, job).dump() << log();
    const int inserts = Calls("instanceGroupManagers.insert");
    const int deletes = Calls("instanceGroupManagers.delete");
    const std::string old_keys[] = {own_key(0), own_key(1)};
    // ph-1's TPU worker 0 (testpod w0), a Spot VM, is preempted; the new group's VMs come with
    // new host keys (both VMs are new ones).
    const nlohmann::json preempted =
        Admin("POST", std::string("preempt?zone=") + kZone + "&mig=ph-1");
    ASSERT_TRUE(preempted.is_object()) << preempted.dump();
    ASSERT_EQ(pod_->address(0), preempted.value("address", "")) << preempted.dump();
    Reboot(0, /*new_key=*/true);
    Reboot(1, /*new_key=*/true);
    // Killed once the old group reads DELETING, or once the new one reads CREATING (each VM's
    // current action, as the stand-in holds it).
    const std::string actions = phase + " " + phase + " ";
    ASSERT_TRUE(
        WaitUntil([&] { return GroupActions("ph-1") == actions; }, std::chrono::seconds(90)))
        << phase << " " << GroupActions("ph-1") << log();
    ASSERT_EQ(0, ::kill(keeper, SIGKILL));
    EXPECT_EQ(actions, GroupActions("ph-1")) << phase;  // still in that phase
    r = RunCommand(Podrun(home) + " watch " + job);
    ASSERT_EQ(0, r.exit_code) << r.output;
    ASSERT_TRUE(WaitUntil(
        [&] {
          const nlohmann::json s = Status(home, job);
          return s.is_object() && s["attempt"]["number"] == attempt + 1 &&
                 s["attempt"]["state"] == "running";
        },
        std::chrono::seconds(120)))
        << phase << " " << Status(home, job).dump() << log();
    // The group deleted once and made once: the next keeper went on from where the last stopped.
    EXPECT_EQ(deletes + 1, Calls("instanceGroupManagers.delete")) << phase << log();
    EXPECT_EQ(inserts + 1, Calls("instanceGroupManagers.insert")) << phase << log();
    const nlohmann::json status = Status(home, job);
    EXPECT_EQ("recovery-after-preemption", status["attempt"]["reason"]) << status.dump();
    EXPECT_TRUE(status["recovering"].is_null()) << status.dump();
    // One preemption per recreation, over, however many keepers it took.
    ASSERT_EQ(static_cast<size_t>(attempt), status["preemptions"].size()) << status.dump();
    EXPECT_EQ("ph-1", status["preemptions"].back()["node"]) << status.dump();
    EXPECT_TRUE(status["preemptions"].back()["recreated"].get<bool>()) << status.dump();
    EXPECT_FALSE(status["preemptions"].back()["back"].is_null()) << status.dump();
    // The recreation intent is closed: a later keeper has nothing of it to finish.
    EXPECT_EQ("0\n", db("SELECT count(*) FROM recreations")) << phase;
    // The old keys of the slice's addresses forgotten, the new VMs' pinned from what they
    // published (the job runs on them: known_hosts is checked strictly for a changed key).
    const std::string known = ReadTextFile(known_hosts);
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(std::string::npos, known.find(old_keys[i])) << phase << " w" << i << "\n" << known;
      EXPECT_NE(std::string::npos,
                known.find(pod_->address(i) + " " + own_key(i) + " podrun-pin:published-by-the-vm"))
          << phase << " w" << i << "\n"
          << known;
    }
    EXPECT_NE(std::string::npos, log().find("finishing the recreation podrun began")) << log();
  }
  r = RunCommand(Podrun(home) + " logs " + job, false);
  EXPECT_NE(std::string::npos, r.output.find("[w1] attempt 3 on w1")) << r.output;
  RunCommand(Podrun(home) + " stop " + job + " --grace 1");
  r = RunCommand(Podrun(home) + " down " + spec + " -y");
  EXPECT_EQ(0, r.exit_code) << r.output;
  Admin("POST", "config?delete_seconds=1&create_seconds=2");
}

}  // namespace
}  // namespace podrun::testing
