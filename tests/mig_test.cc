// Integration tests of MIG slices (`--mig`, `pod.mig`; docs/reference.md "Discovery") on a real
// 4-worker testpod, with the real gcloud (Debian's google-cloud-cli) talking to
// scripts/fake-tpu-api on loopback, which serves the Compute Engine paths gcloud asks for
// (docs/gcloud-verified.md). Each worker's network namespace runs a metadata server at
// 169.254.169.254 that gives its VM's TPU worker number, as on Compute Engine TPU VMs. What is
// checked: the workers in TPU worker order whatever the instance names' order (numbers from the
// VMs themselves when the API does not show them, remembered in the cache, and from the API when
// it does); exec and launch on a MIG, with the environment of a TPU VM pod; two MIGs as one
// multislice job with MEGASCALE_*; an instance not RUNNING refused naming it and its state.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

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

class MigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Dir() + "/gcloud-config");
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
    StartMetadataServers();
    StartApi();
  }
  static void TearDownTestSuite() {
    if (api_pid_ > 0) RunCommand("kill " + std::to_string(api_pid_));
    pod_.reset();  // ends the metadata servers with the pod's processes
  }

  // A metadata server in each worker's network namespace, answering agent-worker-number.
  static void StartMetadataServers() {
    const std::string script =
        "import http.server, sys\n"
        "n = sys.argv[1]\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        if (self.path == '/computeMetadata/v1/instance/attributes/agent-worker-number'\n"
        "                and self.headers.get('Metadata-Flavor') == 'Google'):\n"
        "            body = n.encode()\n"
        "            self.send_response(200)\n"
        "            self.send_header('Content-Length', str(len(body)))\n"
        "            self.end_headers()\n"
        "            self.wfile.write(body)\n"
        "        else:\n"
        "            self.send_response(404)\n"
        "            self.end_headers()\n"
        "    def log_message(self, *args):\n"
        "        pass\n"
        "http.server.HTTPServer(('169.254.169.254', 80), H).serve_forever()\n";
    const std::string server = "/tmp/podrun-mig-metadata.py";
    for (int i = 0; i < kWorkers; ++i) {
      CommandResult up = pod_->Exec(
          i, "cat > " + server + " <<'PYEOF'\n" + script + "PYEOF\n" +
                 "ip addr add 169.254.169.254/32 dev lo && (setsid /usr/bin/python3 " + server +
                 " " + std::to_string(kNumber[i]) +
                 " >/dev/null 2>&1 &) && "
                 "for t in $(seq 50); do curl -sf -o /dev/null http://169.254.169.254/ ; "
                 "[ $? = 22 ] && break; sleep 0.1; done; curl -sf -H 'Metadata-Flavor: Google' "
                 "http://169.254.169.254/computeMetadata/v1/instance/attributes/"
                 "agent-worker-number");
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
        << R"({"name": "slice-bad", "zone": ")" << z << R"(", "instances": [)" << bad << "]}]}";
    std::ofstream(Dir() + "/token") << "fake-token\n";
    const CommandResult started = RunCommand(
        "cd " + Dir() + " && (setsid " + std::string(PODRUN_SOURCE_DIR) +
        "/scripts/fake-tpu-api --spec api.json --verbose > port 2> api.log & echo $! > pid) && "
        "for t in $(seq 100); do [ -s port ] && break; sleep 0.1; done; cat pid; head -1 port");
    ASSERT_EQ(0, started.exit_code) << started.output;
    const std::string out = started.output;
    api_pid_ = std::stoi(out);
    port_ = std::stoi(out.substr(out.find('\n') + 1));
  }

  // podrun with the real gcloud pointed at the stand-in.
  static std::string Podrun(const std::string& home = "home") {
    const std::string api = "http://127.0.0.1:" + std::to_string(port_);
    return "env PODRUN_HOME=" + Dir() + "/" + home + " CLOUDSDK_CONFIG=" + Dir() +
           "/gcloud-config CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=" + api +
           "/compute/v1/ CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=" + api +
           "/ CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=" + Dir() +
           "/token CLOUDSDK_CORE_DISABLE_PROMPTS=1 " + std::string(PODRUN_BINARY);
  }
  static std::string Pod(const std::string& migs) {
    return " --mig " + migs + " --zone " + kZone + " --project " + kProject + " -i " +
           pod_->identity() + " --known-hosts " + pod_->known_hosts();
  }
  // How many times gcloud listed a group's instances.
  static int Lists() {
    return std::stoi(
        RunCommand("grep -c '\"POST .*listManagedInstances' " + Dir() + "/api.log || true").output);
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
  // gcloud's own words for a group that does not exist.
  r = RunCommand(Podrun() + " exec" + Pod("slice-none") + " -- true");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("slice-none")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("was not found")) << r.output;
}

}  // namespace
}  // namespace podrun::testing
