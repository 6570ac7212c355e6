// Integration tests of JAX jobs, with the real JAX (CPU build, the venv of scripts/install-deps)
// on a 4-worker test pod and on --local workers: the examples run; a worker that fails before
// jax.distributed.initialize() is the root cause while the others wait in it; a hang in a
// collective is reported with each process's Python stack; a training job killed mid-run resumes
// from its checkpoint with the same final weights; the variables podrun sets are the ones JAX's
// own cluster detection computes (single slice, TPU VMs given by --hosts, multislice).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "launcher/spec/job_env.h"
#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 44;

// The venv of scripts/install-deps (scripts/requirements-venv.txt), seen by the pod's workers too.
std::string Python() {
  const char* venv = std::getenv("PODRUN_VENV");
  return std::string(venv && *venv ? venv : "/var/lib/podrun/venv") + "/bin/python3";
}

std::string Dir() { return ::testing::TempDir() + "/podrun-jax-test"; }
std::string Home() { return Dir() + "/home"; }
std::string Podrun() { return "env PODRUN_HOME=" + Home() + " " + std::string(PODRUN_BINARY); }
std::string Examples() { return std::string(PODRUN_SOURCE_DIR) + "/examples"; }

// Each distinct "final weights sha256: <hex>" of `output`, by worker.
std::map<int, std::string> Digests(const std::string& output) {
  std::map<int, std::string> digests;
  const std::regex done(R"(\[w(\d)\] process \d/\d: final weights sha256: ([0-9a-f]{64}))");
  for (std::sregex_iterator it(output.begin(), output.end(), done), end; it != end; ++it) {
    digests[std::stoi((*it)[1])] = (*it)[2];
  }
  return digests;
}

class JaxTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Dir());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() {
    pod_.reset();
    KillLocalAgents(Home());
  }
  void SetUp() override {
    ASSERT_EQ(0, RunCommand(Python() + " -c 'import jax, optax'").exit_code)
        << Python() << " has no jax: run scripts/install-deps";
  }

  static std::string Options() {
    return " --hosts @" + pod_->host_file() + " -i " + pod_->identity() + " --known-hosts " +
           pod_->known_hosts();
  }
  // Writes the spec `name` whose every worker runs `program` (Python) with the venv's python.
  static std::string Spec(const std::string& name, const std::string& keys,
                          const std::string& program) {
    std::filesystem::create_directories(Dir() + "/" + name);
    std::ofstream(Dir() + "/" + name + "/" + name + ".py") << program;
    const std::string spec = Dir() + "/" + name + ".yaml";
    std::ofstream(spec) << "name: " << name << "\nsync: " << name << "\nworkdir: ~/" << name << "\n"
                        << keys << "run: |\n  exec " << Python() << " -u " << name << ".py\n";
    return spec;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> JaxTest::pod_;

TEST_F(JaxTest, TheMultihostExampleSumsOverEveryProcessOfThePod) {
  CommandResult r =
      RunCommand(Podrun() + " launch " + Examples() + "/jax-multihost.yaml" + Options());
  ASSERT_EQ(0, r.exit_code) << r.output;
  // Each process's own check of the collective, on its own worker.
  for (int k = 0; k < kWorkers; ++k) {
    const std::string K = std::to_string(k);
    EXPECT_NE(std::string::npos,
              r.output.find("[w" + K + "] process " + K +
                            "/4: 4 global devices (1 local, platform cpu), psum(1)=4 ok, "
                            "psum(process_index)=6 ok"))
        << r.output;
  }
  // The gang met at worker 0 on the pod's network, from podrun's variables.
  EXPECT_NE(std::string::npos,
            r.output.find("[w0] process 0/4: jax 0.10.2, coordinator " + pod_->address(0) +
                          ":8476, from podrun's JAX_* variables"))
      << r.output;
}

// The seeds' "TPU backend initialization is taking more than 60 seconds": one host never comes
// up while the others wait for it in jax.distributed.initialize() (for up to 5 minutes). podrun
// names that worker as the root cause with its last lines and stops the waiting ones.
TEST_F(JaxTest, AWorkerThatFailsBeforeInitializeIsTheRootCauseAndTheWaitingOnesAreStopped) {
  const std::string spec = Spec("init-fail", "grace_seconds: 5\n", R"PY(import os, sys
me = int(os.environ["JAX_PROCESS_ID"])
import jax
if me == 2:
    print("process 2: cannot open the accelerator (simulated)", file=sys.stderr, flush=True)
    sys.exit(3)
print(f"process {me}: joining the gang", flush=True)
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]), process_id=me)
print(f"process {me}: joined", flush=True)
)PY");
  CommandResult r = RunCommand(Podrun() + " launch " + spec + Options());
  EXPECT_EQ(1, r.exit_code) << r.output;
  // The processes' own lines: w2's failure; the others reached initialize() and never left it.
  EXPECT_NE(std::string::npos, r.output.find("[w2] process 2: cannot open the accelerator"))
      << r.output;
  for (int k : {0, 1, 3}) {
    const std::string K = std::to_string(k);
    EXPECT_NE(std::string::npos, r.output.find("[w" + K + "] process " + K + ": joining the gang"))
        << r.output;
    EXPECT_EQ(std::string::npos, r.output.find("process " + K + ": joined")) << r.output;
  }
  // w2 is the root cause, with its last line; the others were stopped because of it.
  EXPECT_NE(std::string::npos, r.output.find("failed: w2 (" + pod_->hosts()[2] + "): exit code 3"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("| process 2: cannot open the accelerator"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("stopped by podrun because of that failure: w0-1,3"))
      << r.output;
  EXPECT_EQ(0, pod_->CountProcesses("init-fail[.]py"));
}

// One process stops before a collective that the others entered: no line from anyone. With
// stall_seconds the hang is reported; `stacks:` makes every process print its Python stack
// (faulthandler) first, and the stopped worker comes first among the suspects.
TEST_F(JaxTest, AHangInACollectiveIsReportedWithEveryProcesssPythonStack) {
  const std::string spec =
      Spec("collective-hang", "stall_seconds: 30\ngrace_seconds: 2\nstacks: {signal: SIGUSR1}\n",
           R"PY(import faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
import jax, jax.numpy as jnp
me = int(os.environ["JAX_PROCESS_ID"])
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]), process_id=me)
total = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")

def stop_before_the_collective():
    time.sleep(3600)

def all_reduce(step):
    return float(total(jnp.full((1,), float(step)))[0])

for step in range(1, 1000):
    value = all_reduce(step)
    if me == 2 and step == 5:
        stop_before_the_collective()  # the others go on into step 6's collective
    print(f"step {step} sum {value}", flush=True)
    time.sleep(0.2)
)PY");
  CommandResult r = RunCommand(Podrun() + " launch " + spec + Options());
  const std::string& out = r.output;
  EXPECT_EQ(1, r.exit_code) << out;
  // Every process made steps together until w2 stopped: each printed step 4's sum of 4 x 4, and
  // all but w2 step 5's.
  for (int k = 0; k < kWorkers; ++k) {
    const std::string K = std::to_string(k);
    EXPECT_NE(std::string::npos, out.find("[w" + K + "] step 4 sum 16.0")) << out;
    EXPECT_EQ(k != 2, out.find("[w" + K + "] step 5 sum 20.0") != std::string::npos) << out;
  }
  // The report: w2 first, behind the others, the only suspect.
  std::smatch m;
  EXPECT_TRUE(std::regex_search(
      out, m,
      std::regex(
          R"(podrun: why: job \S+ attempt 1: 4 workers, gathered in [0-9.]+ s; 1 suspect first\npodrun: w2: suspect: step 4 \(others 5\), python3 pid \d+ )")))
      << out;
  const std::regex suspect_line(R"(\npodrun: w\d+: suspect:)");
  EXPECT_EQ(1, std::distance(std::sregex_iterator(out.begin(), out.end(), suspect_line),
                             std::sregex_iterator()))
      << out;
  // Each process's own Python stack: w2 where it stopped, the others in the collective.
  EXPECT_TRUE(
      std::regex_search(out, std::regex(R"(\[w2\] .*line \d+ in stop_before_the_collective)")))
      << out;
  for (int k : {0, 1, 3}) {
    EXPECT_TRUE(std::regex_search(
        out, std::regex(R"(\[w)" + std::to_string(k) + R"(\] .*line \d+ in all_reduce)")))
        << out;
  }
  EXPECT_NE(std::string::npos,
            out.find("failed: hung: no output from any worker for 30 s (stall_seconds: 30); w2: "
                     "suspect: step 4 (others 5)"))
      << out;
  EXPECT_EQ(0, pod_->CountProcesses("collective-hang[.]py"));
}

// examples/jax-train on the pod: an uninterrupted run; then the same with one process killed
// mid-training: podrun restarts the gang (restarts: 2), every process resumes from the newest
// step all of them saved (PODRUN_RESUMED_FROM), and the final weights are the same bytes.
TEST_F(JaxTest, TheTrainingExampleKilledMidRunResumesToTheSameWeights) {
  const std::string launch =
      Podrun() + " launch " + Examples() + "/jax-train/podrun.yaml" + Options() + " -e STEPS=50";
  CommandResult reference = RunCommand(launch + " -n jax-train-reference");
  ASSERT_EQ(0, reference.exit_code) << reference.output;
  const std::map<int, std::string> want = Digests(reference.output);
  ASSERT_EQ(4u, want.size()) << reference.output;
  for (const auto& [worker, digest] : want) EXPECT_EQ(want.at(0), digest) << worker;
  for (int k = 0; k < kWorkers; ++k) {
    EXPECT_NE(std::string::npos,
              reference.output.find("[w" + std::to_string(k) + "] step 50 loss "))
        << reference.output;
  }
  // Steps were read from the processes' lines: the report has the run's first step and steps.
  CommandResult report = RunCommand(Podrun() + " report jax-train-reference");
  EXPECT_EQ(0, report.exit_code) << report.output;
  EXPECT_NE(std::string::npos, report.output.find("first step")) << report.output;

  // The same, slower, with w1's process killed once its step-20 checkpoint is on disk.
  const std::string log = Dir() + "/jax-train-killed.log";
  const pid_t launcher =
      StartCommand(launch + " -e STEP_SECONDS=0.3 -n jax-train-killed >" + log + " 2>&1");
  const std::string ckpt = pod_->dir() + "/w1/home/podrun-examples/jax-train/checkpoints";
  ASSERT_TRUE(WaitUntil([&] { return std::filesystem::exists(ckpt + "/ckpt-00000020.p1.npz"); },
                        std::chrono::seconds(120)))
      << ReadTextFile(log);
  const std::string ns = "pr" + std::to_string(pod_->id()) + "-w1";
  RunCommand("ip netns pids " + ns +
             " | while read -r p; do tr '\\0' ' ' </proc/$p/cmdline | "
             "grep -q 'train[.]py' && kill -9 $p; done; true");
  int status = 0;
  ASSERT_EQ(launcher, waitpid(launcher, &status, 0));
  const std::string out = ReadTextFile(log);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(0, WEXITSTATUS(status)) << out;
  // Attempt 2 resumed where all had a checkpoint (20, or later if one more was written).
  EXPECT_TRUE(std::regex_search(
      out,
      std::regex(R"(\[w1\] process 1/4: .*attempt 2 \(resumed from: failure\), steps [234]1-50)")))
      << out;
  const std::map<int, std::string> got = Digests(out);
  ASSERT_EQ(4u, got.size()) << out;
  for (const auto& [worker, digest] : got) EXPECT_EQ(want.at(0), digest) << worker << "\n" << out;
}

// A preemption mid-training on a Spot TPU node made by podrun (pod.create), through the TPU API
// stand-in (tests/fake-gcloud: a v4-16 node takes 2 of the pod's workers; preempted, they lose
// every process and their homes, and the node is made again at other workers). The keeper
// recreates it, setup runs on the fresh VMs, and both processes resume from the checkpoint on
// storage they share (a bind mount of a directory under /var/tmp) with the same final weights
// as an uninterrupted 2-process run. Last of the suite: it gives the workers new host keys.
TEST_F(JaxTest, ZAPreemptedSpotRunResumesOnItsRecreatedNodeToTheSameWeights) {
  const std::string train = Examples() + "/jax-train";
  CommandResult reference = RunCommand(Podrun() + " launch " + train +
                                       "/podrun.yaml --local 2 -e STEPS=30 -n jax-spot-reference");
  KillLocalAgents(Home());
  ASSERT_EQ(0, reference.exit_code) << reference.output;
  const std::map<int, std::string> want = Digests(reference.output);
  ASSERT_EQ(2u, want.size()) << reference.output;

  const std::string state = Dir() + "/gcloud";
  const std::string shared = "/var/tmp/podrun-jax-test-" + std::to_string(::getpid());
  RunCommand("rm -rf " + shared);
  std::filesystem::create_directories(state);
  std::filesystem::create_directories(shared + "/ckpt");
  std::string pool;
  for (int i = 0; i < kWorkers; ++i) pool += (i ? ", \"" : "\"") + pod_->address(i) + "\"";
  std::ofstream(state + "/config.json")
      << "{\"project\": \"fake-project\", \"create_seconds\": 1, \"queue_seconds\": 2, "
         "\"delete_seconds\": 0.2, \"host_keys_dir\": \""
      << pod_->dir() << "\", \"pool\": [" << pool << "]}";
  const std::string podrun = "env PODRUN_HOME=" + Home() + " FAKE_GCLOUD_STATE=" + state +
                             " CLOUDSDK_CONFIG=" + state + " PODRUN_GCLOUD=" + PODRUN_SOURCE_DIR +
                             "/tests/fake-gcloud PODRUN_TPU_POLL_SECONDS=1 " + PODRUN_BINARY;
  // The example's spec, on a Spot node that podrun creates, with the checkpoints on the mount.
  std::string spec = std::regex_replace(ReadTextFile(train + "/podrun.yaml"),
                                        std::regex(R"(\nsync: \.[^\n]*)"), "\nsync: " + train);
  spec =
      std::regex_replace(spec, std::regex(R"(\nenv:\n)"), "\nenv:\n  CHECKPOINT_DIR: /mnt/ckpt\n");
  spec = std::regex_replace(spec, std::regex(R"(STEPS: "60")"), R"(STEPS: "30")");
  spec = std::regex_replace(spec, std::regex(R"(STEP_SECONDS: "0.1")"), R"(STEP_SECONDS: "0.3")");
  spec += "pod:\n  tpu: node-jax\n  zone: zone-a\n  user: root\n  identity: " + pod_->identity() +
          "\n  known_hosts: " + pod_->known_hosts() +
          "\n  create: {accelerator_type: v4-16, version: base, spot: true}\n"
          "mounts:\n  - {type: bind, source: " +
          shared + "/ckpt, path: /mnt/ckpt}\n";
  const std::string spec_path = Dir() + "/jax-spot.yaml";
  std::ofstream(spec_path) << spec;
  CommandResult r =
      RunCommand("setsid " + podrun + " launch -d " + spec_path + " -n jax-spot < /dev/null");
  ASSERT_EQ(0, r.exit_code) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("job: (\\S+)"))) << r.output;
  const std::string job = m[1];
  const std::string keeper_log = Home() + "/jobs/" + job + "/keeper.log";
  // Mid-run: once both processes saved step 10.
  ASSERT_TRUE(WaitUntil(
      [&] {
        return std::filesystem::exists(shared + "/ckpt/ckpt-00000010.p0.npz") &&
               std::filesystem::exists(shared + "/ckpt/ckpt-00000010.p1.npz");
      },
      std::chrono::seconds(180)))
      << ReadTextFile(keeper_log);
  // The preemption, as spot_test does it: PREEMPTED, every process of its VMs killed, homes
  // wiped, new host keys.
  std::istringstream preempted(RunCommand("env FAKE_GCLOUD_STATE=" + state + " CLOUDSDK_CONFIG=" +
                                              state + " " + PODRUN_SOURCE_DIR +
                                              "/tests/fake-gcloud --admin preempt node-jax "
                                              "--zone zone-a",
                                          false)
                                   .output);
  int machines = 0;
  for (std::string address; std::getline(preempted, address);) {
    for (int i = 0; i < kWorkers; ++i) {
      if (pod_->address(i) != address) continue;
      const std::string key = pod_->dir() + "/" + pod_->name(i) + "/ssh_host_ed25519_key";
      RunCommand("rm -f " + key + " " + key + ".pub && ssh-keygen -q -t ed25519 -N '' -f " + key +
                 " < /dev/null");
      pod_->Reboot(i);
      pod_->Exec(i, "find ~ -mindepth 1 -maxdepth 1 ! -name .ssh -exec rm -rf {} +");
      ++machines;
    }
  }
  ASSERT_EQ(2, machines);
  // The keeper sees it through: the job's second attempt succeeds, and the keeper ends.
  std::string status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        status = RunCommand(podrun + " status " + job + " --json", false).output;
        const nlohmann::json s = nlohmann::json::parse(status, nullptr, false);
        return !s.is_discarded() && s["attempt"]["state"] == "succeeded" &&
               s["keeper"]["state"] == "ended";
      },
      std::chrono::seconds(300)))
      << status << ReadTextFile(keeper_log);
  const nlohmann::json final_status = nlohmann::json::parse(status);
  EXPECT_EQ(2, final_status["attempt"]["number"]) << status;
  EXPECT_EQ("preemption", final_status["attempt"]["resumed_from"]) << status;
  const std::string logs = RunCommand(podrun + " logs " + job, false).output;
  EXPECT_TRUE(std::regex_search(
      logs,
      std::regex(R"(process 0/2: .*attempt 2 \(resumed from: preemption\), steps [1-3]1-30)")))
      << logs << status;
  const std::map<int, std::string> got = Digests(logs);
  ASSERT_EQ(2u, got.size()) << logs;
  for (const auto& [worker, digest] : got) EXPECT_EQ(want.at(0), digest) << worker << "\n" << logs;
  RunCommand(podrun + " down --tpu node-jax --zone zone-a -y");
  RunCommand("pkill -f '^podrun watch " + job + "' || true");
  RunCommand("rm -rf " + shared);
}

// JAX reads JAX_COORDINATOR_ADDRESS itself (jax/_src/distributed.py) and takes the process count
// and id as arguments: with podrun's values, initialize() forms the gang, every process's index
// is its worker's, and JAX_PLATFORMS is left to JAX (a TPU VM picks its TPU).
TEST_F(JaxTest, PodrunsVariablesAreWhatJaxInitializeTakesOnLocalWorkers) {
  const std::string spec = Spec("env-check", "pod: {local: 4}\ncoordinator_port: 28476\n",
                                R"PY(import os
import jax
from jax._src import distributed
jax.distributed.initialize(num_processes=int(os.environ["JAX_NUM_PROCESSES"]),
                           process_id=int(os.environ["JAX_PROCESS_ID"]))
print(f"process {jax.process_index()}/{jax.process_count()}: worker "
      f"{os.environ['PODRUN_WORKER_ID']}, coordinator {distributed.global_state.coordinator_address}, "
      f"JAX_PLATFORMS {os.environ.get('JAX_PLATFORMS', 'unset')}, platform {jax.devices()[0].platform}, "
      f"{jax.device_count()} devices")
jax.distributed.shutdown()
)PY");
  CommandResult r = RunCommand(Podrun() + " launch " + spec);
  KillLocalAgents(Home());
  ASSERT_EQ(0, r.exit_code) << r.output;
  for (int k = 0; k < kWorkers; ++k) {
    const std::string K = std::to_string(k);
    EXPECT_NE(std::string::npos,
              r.output.find("[w" + K + "] process " + K + "/4: worker " + K +
                            ", coordinator 127.0.0.1:28476, JAX_PLATFORMS unset, platform cpu, 4 "
                            "devices"))
        << r.output;
  }
}

// On a Cloud TPU VM, JAX's own detection (jax/_src/clusters/cloud_tpu_cluster.py) computes the
// process count, id and coordinator from the TPU metadata (GceTpuCluster: the VM's worker number
// in its slice, its slice's workers) or from TPU_WORKER_ID / TPU_WORKER_HOSTNAMES (GkeTpuCluster,
// what podrun sets on TPU VMs given by --hosts), and MEGASCALE_* across slices. Here the
// installed JAX's classes, given what each VM of two 2-worker slices would say, must come to
// podrun's JAX_PROCESS_ID, JAX_NUM_PROCESSES and JAX_COORDINATOR_ADDRESS host for every worker.
TEST(JaxEnvTest, PodrunsVariablesMatchJaxsOwnTpuClusterDetection) {
  const std::vector<std::string> addresses = {"10.0.0.2", "10.0.0.3", "10.0.1.2", "10.0.1.3"};
  const std::string script = ::testing::TempDir() + "/jax-env-check.py";
  std::ofstream(script) << R"PY(import os, sys
from jax._src.clusters import cloud_tpu_cluster as tpu
# The TPU metadata, never the network: a single slice's tpu-env has no MEGASCALE_* line.
tpu.get_metadata = lambda key: ("", 200) if key == "tpu-env" else sys.exit(f"metadata {key}?")
kind, in_slice, slice_workers = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
if kind == "gce":
    class Vm(tpu.GceTpuCluster):
        _get_process_id_in_slice = staticmethod(lambda: in_slice)
        _get_worker_list_in_slice = staticmethod(lambda: slice_workers)
else:
    Vm = tpu.GkeTpuCluster
host = Vm.get_coordinator_address(timeout_secs=1, override_coordinator_port=None).rsplit(":", 1)[0]
want = (os.environ["JAX_PROCESS_ID"], os.environ["JAX_NUM_PROCESSES"],
        os.environ["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)[0])
got = (str(Vm.get_process_id()), str(Vm.get_process_count()), host)
print(f"{kind}: jax {got}, podrun {want}: {'same' if got == want else 'DIFFERENT'}")
)PY";
  struct Case {
    std::string kind;         // gce: a discovered TPU node; gke: TPU VMs given by --hosts
    std::vector<int> slices;  // each worker's slice (empty: one slice)
  };
  for (const Case& c : {Case{"gce", {0, 0, 1, 1}}, Case{"gce", {}}, Case{"gke", {}}}) {
    for (int w = 0; w < 4; ++w) {
      JobEnvParams params;
      params.job_id = "j";
      params.worker_index = w;
      params.worker_addresses = addresses;
      params.worker_slices = c.slices;
      params.discovered_cloud_tpu = c.kind == "gce";
      const JobEnv env = BuildJobEnv(params);
      // What the VM's TPU metadata says: its worker number in its slice, its slice's workers.
      const int per_slice = c.slices.empty() ? 4 : 2;
      const int first = w / per_slice * per_slice;
      std::string workers;
      for (int i = first; i < first + per_slice; ++i)
        workers += (workers.empty() ? "" : ",") + addresses[i];
      std::string command = "env -i";
      for (const auto& [name, value] : env.vars) command += " " + ShellQuote(name + "=" + value);
      command += " " + Python() + " " + script + " " + c.kind + " " + std::to_string(w - first) +
                 " " + workers;
      CommandResult r = RunCommand(command);
      EXPECT_EQ(0, r.exit_code) << r.output;
      EXPECT_NE(std::string::npos, r.output.find(": same"))
          << c.kind << " w" << w << ": " << r.output;
    }
  }
}

}  // namespace
}  // namespace podrun::testing
