// Integration tests of `podrun launch` (and the agent) against a real 4-worker testpod and on
// --local workers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 12;

std::string Home() { return ::testing::TempDir() + "/podrun-launch-test-home"; }

std::string WriteSpec(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

std::string JobIdOf(const std::string& output) {
  std::smatch m;
  if (std::regex_search(output, m, std::regex("job: ([0-9a-f-]+)"))) return m[1];
  return "";
}

// A job whose every worker prints "line 1" .. "line N", pausing `pause` seconds every `every`
// lines so that it runs long enough to be interrupted.
std::string NumberedLinesSpec(const std::string& name, int lines, int every,
                              const std::string& pause) {
  return WriteSpec(name, "name: " + name + "\nrun: |\n  for i in $(seq 1 " + std::to_string(lines) +
                             "); do echo \"line $i\"; if [ $((i % " + std::to_string(every) +
                             ")) = 0 ]; then sleep " + pause + "; fi; done\n");
}

// Every line of `text` but launch's "job: <id>" is "[wK] line N", and each of the pod's workers
// printed 1..lines exactly once, in order.
void ExpectEveryLineOnceInOrder(const std::string& text, int lines) {
  std::map<int, int> next;  // worker -> last line number seen
  std::istringstream in(text);
  std::regex line_re(R"(\[w(\d)\] line (\d+))");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("job: ", 0) == 0) continue;
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, line_re)) << line;
    int w = std::stoi(m[1]);
    int n = std::stoi(m[2]);
    ASSERT_EQ(next[w] + 1, n) << "worker " << w;
    next[w] = n;
  }
  ASSERT_EQ(static_cast<size_t>(kWorkers), next.size());
  for (auto& [w, n] : next) EXPECT_EQ(lines, n) << "worker " << w;
}

class LaunchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Home());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() {
    pod_.reset();
    KillLocalAgents(Home());
  }

  static std::string Podrun() {
    return "env PODRUN_HOME=" + Home() + " " + std::string(PODRUN_BINARY);
  }
  static std::string PodOptions(const TestPod& pod) {
    return " --hosts @" + pod.host_file() + " -i " + pod.identity() + " --known-hosts " +
           pod.known_hosts();
  }
  static CommandResult Launch(const std::string& spec, const std::string& extra = "",
                              bool merge_stderr = true) {
    return RunCommand(Podrun() + " launch " + spec + PodOptions(*pod_) + " " + extra, merge_stderr);
  }
  // Polls the pod's count of processes matching `marker` (an extended regex; processes outside
  // this test's pod never count) until it is `want` or `timeout` has passed; returns the last
  // count. For processes that end (or start) a moment after the command that caused it returned:
  // a check made once, at once, would flake; one made after a fixed sleep could pass by luck.
  static int WaitForProcessCount(const std::string& marker, int want,
                                 std::chrono::seconds timeout = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int count = pod_->CountProcesses(marker);
    while (count != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      count = pod_->CountProcesses(marker);
    }
    return count;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> LaunchTest::pod_;

TEST_F(LaunchTest, TorchDdpTrainsOnFourWorkersWithIdenticalWeights) {
  // The spec syncs the examples directory into every worker's workdir (sync: .).
  CommandResult r = Launch(std::string(PODRUN_SOURCE_DIR) + "/examples/torch-ddp.yaml");
  ASSERT_EQ(0, r.exit_code) << r.output;
  std::regex done(
      R"(\[w(\d)\] rank \d/4: allreduce ok \(sum=6\), weights sha256=([0-9a-f]{64}) identical)");
  std::map<std::string, std::string> digests;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), done), end; it != end; ++it) {
    digests[(*it)[1]] = (*it)[2];
  }
  ASSERT_EQ(4u, digests.size()) << r.output;
  for (auto& [worker, digest] : digests) EXPECT_EQ(digests["0"], digest) << worker;
  // Each rank ran on its own worker (its own hostname), rank K on worker K, and the gang met at
  // worker 0's address on the pod's network (not at a loopback address).
  for (int i = 0; i < kWorkers; ++i) {
    std::string k = std::to_string(i);
    EXPECT_NE(std::string::npos, r.output.find("[w" + k + "] rank " + k + "/4: host w" + k +
                                               " (podrun worker " + k + ")"))
        << r.output;
  }
  EXPECT_NE(std::string::npos, r.output.find("[w0] rank 0/4: torch ")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("master " + pod_->address(0) + ":8476")) << r.output;
}

TEST_F(LaunchTest, TorchDdpOnFourLocalWorkers) {
  std::string line =
      Podrun() + " launch " + PODRUN_SOURCE_DIR + "/examples/torch-ddp.yaml" + " --local 4";
  CommandResult r = RunCommand(line);
  ASSERT_EQ(0, r.exit_code) << r.output;
  std::regex done(R"(rank \d/4: allreduce ok \(sum=6\), weights sha256=([0-9a-f]{64}))");
  std::set<std::string> digests;
  int count = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), done), end; it != end; ++it) {
    digests.insert((*it)[1]);
    ++count;
  }
  EXPECT_EQ(4, count) << r.output;
  EXPECT_EQ(1u, digests.size()) << r.output;
}

TEST_F(LaunchTest, OneFailingWorkerStopsTheGangWithinSeconds) {
  std::string spec = WriteSpec("fail3", R"(name: fail3
grace_seconds: 5
run: |
  if [ "$PODRUN_WORKER_ID" = 2 ]; then sleep 1; echo "w2 gives up" >&2; exit 3; fi
  echo "worker $PODRUN_WORKER_ID sleeps"
  exec -a podrun-test-sleeper-fail3 sleep 300
)");
  auto start = std::chrono::steady_clock::now();
  CommandResult r = Launch(spec);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(1, r.exit_code) << r.output;
  // The others sleep for 300 s: only the gang stop ends them this soon. (A generous bound:
  // how fast it is belongs to scripts/bench, not to a test on two loaded cores.)
  EXPECT_LT(seconds, 60) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("failed: w2 (" + pod_->hosts()[2] + "): exit code 3"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("| w2 gives up")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("stopped by podrun because of that failure: w0-1,3"))
      << r.output;
  EXPECT_EQ(0, WaitForProcessCount("podrun-test-sleeper-fail3", 0));
}

TEST_F(LaunchTest, UnreachableWorkerBeforeGoStartsNothingAnywhere) {
  std::string warm = WriteSpec("warm", "name: warm\nrun: 'true'\n");
  ASSERT_EQ(0, Launch(warm).exit_code);  // agents up everywhere
  // The agents and any process forked from them (a prepared job waits as a fork of its agent).
  const std::string kAgentProcess = "podrun-agent-[0-9a-f]+ serve";
  int agents = pod_->CountProcesses(kAgentProcess);
  EXPECT_EQ(kWorkers, agents);
  // A job's supervisor, and the prepared process it forks, run as "podrun-agent-... supervise".
  const std::string kJobProcess = "podrun-agent-[0-9a-f]+ supervise";
  EXPECT_EQ(0, WaitForProcessCount(kJobProcess, 0));  // the warm job's are gone
  std::string spec = WriteSpec("never", "name: never\nrun: touch /tmp/podrun-test-ran\n");
  pod_->Cut(3);
  CommandResult r = Launch(spec, "--connect-timeout 2");
  pod_->Heal(3);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("nothing was started anywhere")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("w3 (" + pod_->hosts()[3] + ")")) << r.output;
  // The prepared workers' waiting processes were released, not left behind. Once they are gone,
  // whatever they would have run has run: only then is the marker file's absence a proof.
  EXPECT_EQ(agents, WaitForProcessCount(kAgentProcess, agents));
  EXPECT_EQ(0, WaitForProcessCount(kJobProcess, 0));
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(0, pod_->Exec(i, "test -e /tmp/podrun-test-ran").exit_code) << "w" << i;
  }
}

TEST_F(LaunchTest, AgentIsStaticListensOnNoTcpPortAndIsUploadedOnce) {
  std::string spec = WriteSpec("hello", "name: hello\nrun: echo hello from $(hostname)\n");
  CommandResult first = Launch(spec);
  ASSERT_EQ(0, first.exit_code) << first.output;
  CommandResult second = Launch(spec);
  ASSERT_EQ(0, second.exit_code) << second.output;
  EXPECT_EQ(std::string::npos, second.output.find("agent installed")) << second.output;
  EXPECT_NE(std::string::npos, second.output.find("[w3] hello from w3")) << second.output;

  CommandResult file = RunCommand("file " + std::string(PODRUN_AGENT));
#ifndef PODRUN_SANITIZED  // a sanitized build's agent is dynamic (CMakeLists.txt)
  EXPECT_NE(std::string::npos, file.output.find("statically linked")) << file.output;
#endif
  for (int i = 0; i < kWorkers; ++i) {
    CommandResult listeners = pod_->Exec(i, "ss -ltnpH");
    EXPECT_EQ(std::string::npos, listeners.output.find("podrun-agent")) << listeners.output;
    CommandResult mode = pod_->Exec(i, "stat -c %a /root/.podrun/run");
    EXPECT_EQ("700\n", mode.output);
    CommandResult agents = pod_->Exec(i, "ls /root/.podrun/bin");
    EXPECT_EQ(1, std::count(agents.output.begin(), agents.output.end(), '\n')) << agents.output;
  }
}

TEST_F(LaunchTest, LogsAfterTheLauncherIsKilledHaveEveryLineOnceInOrder) {
  constexpr int kLines = 20000;
  std::string spec = NumberedLinesSpec("numbered", kLines, 2000, "0.2");
  std::string out = ::testing::TempDir() + "/killed-launcher.out";
  std::filesystem::remove(out);  // no stale text from an earlier run
  pid_t pid =
      StartCommand(Podrun() + " launch " + spec + PodOptions(*pod_) + " > " + out + " 2>&1");
  // Kill it once the job runs everywhere and has printed some of its lines.
  std::string text = WaitForText(out, "[w0] line 10\n");
  std::string job = JobIdOf(text);
  ASSERT_FALSE(job.empty()) << text;
  ASSERT_NE(std::string::npos, text.find("started on 4 workers")) << text;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);

  CommandResult logs = RunCommand(Podrun() + " logs " + job + " -f", /*merge_stderr=*/false);
  ASSERT_EQ(0, logs.exit_code) << logs.output.substr(0, 2000);
  ExpectEveryLineOnceInOrder(logs.output, kLines);
}

TEST_F(LaunchTest, BrokenConnectionIsReconnectedAndTheLogResumesExactly) {
  constexpr int kLines = 3000;
  std::string spec = NumberedLinesSpec("resume", kLines, 100, "0.1");
  std::string out = ::testing::TempDir() + "/resume.out";
  std::string err = ::testing::TempDir() + "/resume.err";
  std::filesystem::remove(out);  // no stale text from an earlier run
  pid_t pid =
      StartCommand(Podrun() + " launch " + spec + PodOptions(*pod_) + " > " + out + " 2> " + err);
  WaitForText(out, "[w1] line 500\n");
  // Kill the sshd processes that serve the launcher's connection to w1: the tunnel breaks.
  CommandResult killed = pod_->Exec(
      1,
      "ss -tnpH state established '( sport = :22 )' | grep -o 'pid=[0-9]*' | cut -d= -f2 | "
      "sort -u | xargs -r kill");
  EXPECT_EQ(0, killed.exit_code) << killed.output;
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  std::string text = ReadTextFile(out), messages = ReadTextFile(err);
  EXPECT_EQ(0, WEXITSTATUS(status)) << messages;
  EXPECT_NE(std::string::npos, messages.find("w1 (" + pod_->hosts()[1] + "): reconnected"))
      << messages;
  ExpectEveryLineOnceInOrder(text, kLines);
}

TEST_F(LaunchTest, CtrlCStopsTheJobOnEveryWorker) {
  std::string spec = WriteSpec("interrupt",
                               "name: interrupt\nrun: |\n  echo up\n"
                               "  exec -a podrun-test-interrupted sleep 300\n");
  std::string out = ::testing::TempDir() + "/interrupt.out";
  std::filesystem::remove(out);  // no stale text from an earlier run
  pid_t pid =
      StartCommand(Podrun() + " launch " + spec + PodOptions(*pod_) + " > " + out + " 2>&1");
  ASSERT_EQ(kWorkers, WaitForProcessCount("podrun-test-interrupted", kWorkers));
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::string text = ReadTextFile(out);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(130, WEXITSTATUS(status)) << text;
  EXPECT_EQ(0, WaitForProcessCount("podrun-test-interrupted", 0));
  EXPECT_NE(std::string::npos, text.find("interrupted")) << text;
}

TEST_F(LaunchTest, DetachedJobShowsRunningInStatus) {
  std::string spec = WriteSpec("detached",
                               "name: detached\nrun: exec -a podrun-test-detached "
                               "sleep 30\n");
  CommandResult r = Launch(spec, "-d");
  ASSERT_EQ(0, r.exit_code) << r.output;
  std::string job = JobIdOf(r.output);
  ASSERT_FALSE(job.empty()) << r.output;
  EXPECT_EQ(kWorkers, WaitForProcessCount("podrun-test-detached", kWorkers));
  CommandResult status = RunCommand(Podrun() + " status " + job);
  EXPECT_EQ(0, status.exit_code) << status.output;
  // A row per worker in state running (not "running" anywhere in the output).
  for (int i = 0; i < kWorkers; ++i) {
    std::regex row("\\nw" + std::to_string(i) + "\\s+\\S+\\s+running\\s");
    EXPECT_TRUE(std::regex_search(status.output, row)) << "w" << i << "\n" << status.output;
  }
  CommandResult stop = RunCommand(Podrun() + " stop " + job);
  EXPECT_EQ(0, stop.exit_code) << stop.output;
  EXPECT_EQ(0, WaitForProcessCount("podrun-test-detached", 0));
}

TEST_F(LaunchTest, FreeAcceleratorsRemovesAStaleLibtpuLockfileBeforeRun) {
  // A Ctrl-C'd run under plain SSH left libtpu's lockfile on w1 (each worker has its own /tmp).
  ASSERT_EQ(0, pod_->Exec(1, "touch /tmp/libtpu_lockfile").exit_code);
  // Off: left alone.
  std::string off = WriteSpec("accel-off",
                              "name: accel-off\nfree_accelerators: false\n"
                              "run: if [ -e /tmp/libtpu_lockfile ]; then echo still-there; fi\n");
  CommandResult kept = Launch(off);
  EXPECT_EQ(0, kept.exit_code) << kept.output;
  EXPECT_NE(std::string::npos, kept.output.find("[w1] still-there")) << kept.output;
  // On (the default): removed before run, and said so naming the worker.
  std::string on = WriteSpec("accel-on",
                             "name: accel-on\n"
                             "run: test -e /tmp/libtpu_lockfile || echo lockfile-gone\n");
  CommandResult freed = Launch(on);
  EXPECT_EQ(0, freed.exit_code) << freed.output;
  EXPECT_NE(std::string::npos, freed.output.find("[w1] lockfile-gone")) << freed.output;
  EXPECT_NE(std::string::npos,
            freed.output.find("w1 (" + pod_->hosts()[1] +
                              "): freeing accelerators: removed a stale /tmp/libtpu_lockfile"))
      << freed.output;
  EXPECT_NE(0, pod_->Exec(1, "test -e /tmp/libtpu_lockfile").exit_code);
}

TEST(LaunchWithoutForwarding, DialStdioCarriesTheTunnel) {
  TestPod pod(2, kPodId + 1, {"AllowStreamLocalForwarding no"});
  std::string spec = WriteSpec("nofwd", "name: nofwd\nrun: echo via $(hostname)\n");
  CommandResult r = RunCommand("env PODRUN_HOME=" + Home() + " " + PODRUN_BINARY + " launch " +
                               spec + " --hosts @" + pod.host_file() + " -i " + pod.identity() +
                               " --known-hosts " + pod.known_hosts());
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] via w0")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] via w1")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("through dial-stdio on 2")) << r.output;
}

TEST(LaunchLocal, RunProcessGetsTheContractEnvAndSecretsAreNeverStored) {
  std::string home = ::testing::TempDir() + "/podrun-env-test-home";
  RunCommand("rm -rf " + home);
  std::string spec = WriteSpec("envjob", R"(name: envjob
workdir: ~/wd
env: {FROM_SPEC: spec-value}
secret_env: [LAUNCH_TEST_SECRET]
coordinator_port: 9123
run: |
  echo "ids $PODRUN_WORKER_ID/$PODRUN_NUM_WORKERS rank $RANK/$WORLD_SIZE jax $JAX_PROCESS_ID/$JAX_NUM_PROCESSES"
  echo "coord $PODRUN_COORDINATOR master $MASTER_ADDR:$MASTER_PORT attempt $PODRUN_ATTEMPT"
  echo "spec $FROM_SPEC cli $FROM_CLI pwd $PWD"
  [ "${#LAUNCH_TEST_SECRET}" = 15 ] && [ "${LAUNCH_TEST_SECRET%-42}" != "$LAUNCH_TEST_SECRET" ] && echo secret-ok
)");
  CommandResult r =
      RunCommand("env LAUNCH_TEST_SECRET=s3cr3t-value-42 PODRUN_HOME=" + home + " " +
                     PODRUN_BINARY + " launch " + spec + " --local 2 -e FROM_CLI=cli-value",
                 /*merge_stderr=*/false);
  KillLocalAgents(home);
  ASSERT_EQ(0, r.exit_code) << r.output;
  for (int i = 0; i < 2; ++i) {
    std::string w = "[w" + std::to_string(i) + "] ";
    std::string k = std::to_string(i);
    EXPECT_NE(std::string::npos,
              r.output.find(w + "ids " + k + "/2 rank " + k + "/2 jax " + k + "/2"))
        << r.output;
    EXPECT_NE(std::string::npos,
              r.output.find(w + "coord 127.0.0.1:9123 master 127.0.0.1:9123 attempt 1"))
        << r.output;
    EXPECT_NE(std::string::npos, r.output.find(w + "spec spec-value cli cli-value pwd /tmp/"))
        << r.output;
    EXPECT_NE(std::string::npos, r.output.find("podrun-env-test-home/local/w" + k + "/wd\n"))
        << r.output;
    EXPECT_NE(std::string::npos, r.output.find(w + "secret-ok")) << r.output;
  }
  // Neither the job store, the launcher's logs nor the agents' files hold the secret.
  CommandResult grep = RunCommand("grep -r -l s3cr3t-value-42 " + home + " || true");
  EXPECT_EQ("", grep.output);
}

TEST(LaunchUsage, BadSpecExits2AndRecordsNothing) {
  std::string spec = WriteSpec("bad", "name: bad\nrunn: true\n");
  std::string home = ::testing::TempDir() + "/podrun-bad-spec-home";
  RunCommand("rm -rf " + home);
  CommandResult r = RunCommand("env PODRUN_HOME=" + home + " " + PODRUN_BINARY + " launch " + spec +
                               " --local 2");
  EXPECT_EQ(2, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(spec + ":2:1")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(home + "/podrun.db"));
  EXPECT_EQ(std::string::npos, r.output.find("job:")) << r.output;
}

}  // namespace
}  // namespace podrun::testing
