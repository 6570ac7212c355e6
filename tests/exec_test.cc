// Integration tests of `podrun exec` against a real 8-worker testpod (sshd in namespaces).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 8;
constexpr int kPodId = 11;

class ExecTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pod_ = std::make_unique<TestPod>(kWorkers, kPodId); }
  static void TearDownTestSuite() { pod_.reset(); }

  // The shell command line of `podrun exec` against the pod with the given extra options.
  static std::string ExecLine(const std::string& options, const std::string& command) {
    return std::string(PODRUN_BINARY) + " exec --hosts @" + pod_->host_file() + " -i " +
           pod_->identity() + " --known-hosts " + pod_->known_hosts() + " " + options + " -- " +
           ShellQuote(command);
  }

  // `podrun exec` against the pod with the given extra options; stderr merged unless asked.
  static CommandResult Exec(const std::string& options, const std::string& command,
                            bool merge_stderr = true) {
    return RunCommand(ExecLine(options, command), merge_stderr);
  }

  // Makes `dir`/known_hosts, the pod's with worker 4's address carrying another key; returns the
  // fingerprint of worker 4's real key (what a refusal names).
  static std::string KnownHostsWithAnotherKeyForW4(const std::string& dir) {
    RunCommand("rm -rf " + dir + " && mkdir -p " + dir + " && ssh-keygen -q -t ed25519 -N '' -f " +
               dir + "/other");
    const std::string address = pod_->address(4);
    std::string other_key = RunCommand("cut -d' ' -f1,2 " + dir + "/other.pub").output;
    other_key.pop_back();
    RunCommand("grep -v '^" + address + " ' " + pod_->known_hosts() + " > " + dir +
               "/known_hosts && echo '" + address + " " + other_key + "' >> " + dir +
               "/known_hosts");
    std::string fingerprint =
        RunCommand("ssh-keygen -lf " + pod_->dir() + "/w4/ssh_host_ed25519_key.pub | cut -d' ' -f2")
            .output;
    fingerprint.pop_back();
    return fingerprint;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> ExecTest::pod_;

TEST_F(ExecTest, EveryWorkerAnswersWithItsLabel) {
  CommandResult r = Exec("", "hostname", /*merge_stderr=*/false);
  ASSERT_EQ(0, r.exit_code) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    std::string line = "[w" + std::to_string(i) + "] w" + std::to_string(i) + "\n";
    EXPECT_NE(std::string::npos, r.output.find(line)) << r.output;
  }
  EXPECT_EQ(kWorkers, std::count(r.output.begin(), r.output.end(), '\n'));
}

// The worker's stderr reaches podrun's stderr, labelled as its stdout is, and only there.
TEST_F(ExecTest, StderrLinesGoToStderr) {
  const std::string err_file = ::testing::TempDir() + "/exec-test-stderr";
  CommandResult r = RunCommand(ExecLine("-w 0", "echo out; echo err >&2") + " 2>" + err_file,
                               /*merge_stderr=*/false);
  const std::string err = ReadTextFile(err_file);
  EXPECT_EQ(0, r.exit_code) << err;
  EXPECT_EQ("[w0] out\n", r.output);
  EXPECT_NE(std::string::npos, err.find("[w0] err\n")) << err;
  EXPECT_EQ(std::string::npos, err.find("[w0] out")) << err;
}

TEST_F(ExecTest, OneFailingWorkerGivesExit1) {
  CommandResult r = Exec("", "test $(hostname) != w5");
  EXPECT_EQ(1, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("w5 (exit code 1)")) << r.output;
}

TEST_F(ExecTest, WorkerListKeepsPodWideIndexes) {
  CommandResult r = Exec("-w 2,5-6", "hostname", /*merge_stderr=*/false);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("[w2] w2\n[w5] w5\n[w6] w6\n", [&] {
    std::vector<std::string> lines;
    std::istringstream in(r.output);
    for (std::string l; std::getline(in, l);) lines.push_back(l + "\n");
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (auto& l : lines) out += l;
    return out;
  }());
}

TEST_F(ExecTest, JsonGivesOneObjectPerWorker) {
  CommandResult r = Exec("-w 1,3 --json", "hostname; echo e >&2; exit 4", false);
  EXPECT_EQ(1, r.exit_code);
  EXPECT_NE(std::string::npos, r.output.find("\"worker\":1")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("\"stdout\":\"w3\\n\"")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("\"stderr\":\"e\\n\"")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("\"exit_code\":4")) << r.output;
  EXPECT_EQ(2, std::count(r.output.begin(), r.output.end(), '\n'));
}

TEST_F(ExecTest, FoldPrintsEachDistinctLineOnceWithItsWorkerRanges) {
  // "Which workers have jax 0.4.30?": w3 and w5 differ; every worker names itself.
  CommandResult r = Exec("--fold",
                         "case $(hostname) in w3|w5) echo jax 0.4.29;; *) echo jax 0.4.30;; esac; "
                         "echo same line",
                         /*merge_stderr=*/false);
  ASSERT_EQ(0, r.exit_code) << r.output;
  // As clush -b: workers with identical output form one group, printed once.
  EXPECT_NE(std::string::npos, r.output.find("[w0-2,4,6-7] jax 0.4.30\n[w0-2,4,6-7] same line\n"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w3,5] jax 0.4.29\n[w3,5] same line\n")) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("[w0] ")) << r.output;
}

TEST_F(ExecTest, UnreachableWorkerGivesExit3WithinTimeoutOthersComplete) {
  pod_->Cut(3);
  auto start = std::chrono::steady_clock::now();
  CommandResult r = Exec("--connect-timeout 2", "hostname");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  pod_->Heal(3);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_LT(seconds, 2 + 2.0) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("w3 (" + pod_->hosts()[3])) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("timed out")) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    if (i == 3) continue;
    std::string line = "[w" + std::to_string(i) + "] w" + std::to_string(i) + "\n";
    EXPECT_NE(std::string::npos, r.output.find(line)) << r.output;
  }
}

TEST_F(ExecTest, WorkerCutOffMidCommandIsDeclaredLost) {
  std::string line = "env PODRUN_SSH_KEEPALIVE_SECONDS=1 " + std::string(PODRUN_BINARY) +
                     " exec --hosts @" + pod_->host_file() + " -i " + pod_->identity() +
                     " --known-hosts " + pod_->known_hosts() + " -w 7 -- 'echo up; sleep 8'";
  std::string out = ::testing::TempDir() + "/exec-cut.out";
  std::filesystem::remove(out);  // no stale text from an earlier run
  pid_t pid = StartCommand(line + " > " + out + " 2>&1");
  WaitForText(out, "[w7] up");
  pod_->Cut(7);
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  ::waitpid(pid, &status, 0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  pod_->Heal(7);
  std::string text = ReadTextFile(out);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(1, WEXITSTATUS(status)) << text;
  EXPECT_LT(seconds, 7.5) << text;  // before the command itself would have ended
  EXPECT_NE(std::string::npos, text.find("no answer to keepalives")) << text;
  EXPECT_NE(std::string::npos, text.find("1 of 1 workers failed: w7 (lost)")) << text;
}

// Ctrl-C while the command runs on every worker: exit 130 and "interrupted". The loop stops
// with every worker's coroutine suspended; their frames (sessions, channels) must be destroyed
// before the objects they refer to, which an ASan build (PODRUN_SANITIZE=address) checks here.
TEST_F(ExecTest, CtrlCWhileTheCommandRunsExits130) {
  std::string out = ::testing::TempDir() + "/exec-interrupt.out";
  std::filesystem::remove(out);  // no stale text from an earlier run
  pid_t pid =
      StartCommand(ExecLine("--fanout 2", "echo ready; exec sleep 60") + " > " + out + " 2>&1");
  for (int i = 0; i < kWorkers; ++i) WaitForText(out, "[w" + std::to_string(i) + "] ready");
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::string text = ReadTextFile(out);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(130, WEXITSTATUS(status)) << text;
  EXPECT_NE(std::string::npos, text.find("interrupted")) << text;
}

// Through a jump host to a port where nothing listens: the jump host's sshd answers the
// channel open with "connect failed" (its reason code, which podrun reads from libssh's error),
// and the worker is retried as a refused connection until --connect-timeout, then named.
TEST_F(ExecTest, JumpToAClosedPortIsRetriedAsRefused) {
  std::string line = std::string(PODRUN_BINARY) + " exec --hosts " + pod_->address(1) +
                     ":1 -J root@" + pod_->address(0) + " -i " + pod_->identity() +
                     " --known-hosts " + pod_->known_hosts() + " --connect-timeout 2 -- true";
  CommandResult r = RunCommand(line);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(pod_->address(1) + ":1")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("gave up after")) << r.output;
}

TEST_F(ExecTest, ChangedHostKeyIsRefusedAndNothingRuns) {
  // A known_hosts in which worker 4's address carries another key.
  const std::string dir = ::testing::TempDir() + "/changed-key";
  const std::string fingerprint = KnownHostsWithAnotherKeyForW4(dir);
  const std::string address = pod_->address(4);
  pod_->Exec(4, "rm -f /tmp/ran");
  std::string line = std::string(PODRUN_BINARY) + " exec --hosts @" + pod_->host_file() + " -i " +
                     pod_->identity() + " --known-hosts " + dir +
                     "/known_hosts -- 'touch /tmp/ran; hostname'";
  CommandResult r = RunCommand(line);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("HOST KEY CHANGED for " + address)) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("ssh-ed25519")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(fingerprint)) << r.output << fingerprint;
  EXPECT_EQ(std::string::npos, r.output.find("[w4]")) << r.output;
  EXPECT_NE(0, pod_->Exec(4, "test -e /tmp/ran").exit_code);
  EXPECT_EQ(0, pod_->Exec(5, "test -e /tmp/ran").exit_code);
}

TEST_F(ExecTest, StrictHostKeysRefusesUnknownHostsElseRecordsThem) {
  std::string known = ::testing::TempDir() + "/empty_known_hosts";
  RunCommand("rm -f " + known);
  std::string base = std::string(PODRUN_BINARY) + " exec --hosts @" + pod_->host_file() + " -i " +
                     pod_->identity() + " --known-hosts " + known + " -w 0-1 ";
  CommandResult strict = RunCommand(base + "--strict-host-keys -- hostname");
  EXPECT_EQ(3, strict.exit_code) << strict.output;
  EXPECT_NE(std::string::npos, strict.output.find("unknown host key")) << strict.output;
  EXPECT_EQ(std::string::npos, strict.output.find("[w0]")) << strict.output;

  CommandResult accept_new = RunCommand(base + "-- hostname");
  EXPECT_EQ(0, accept_new.exit_code) << accept_new.output;
  CommandResult now_known = RunCommand(base + "--strict-host-keys -- hostname");
  EXPECT_EQ(0, now_known.exit_code) << now_known.output;
}

TEST_F(ExecTest, SshConfigAliasesWork) {
  std::string line = std::string(PODRUN_BINARY) + " exec --hosts w1,w2 -F " + pod_->ssh_config() +
                     " --known-hosts " + pod_->known_hosts() + " -- hostname";
  CommandResult r = RunCommand(line, false);
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] w1")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] w2")) << r.output;
}

TEST_F(ExecTest, HundredMegabytesPerWorkerArriveCompleteAndUnmixed) {
  // 1,000,000 lines of 100 bytes per worker: "wK " + 96 digits + newline.
  std::string out = ::testing::TempDir() + "/exec-100mb.txt";
  std::string line = std::string(PODRUN_BINARY) + " exec --hosts @" + pod_->host_file() + " -i " +
                     pod_->identity() + " --known-hosts " + pod_->known_hosts() +
                     " -w 0-3 -- 'yes \"$(hostname) $(printf %096d 0)\" | head -c 100000000' > " +
                     out;
  CommandResult r = RunCommand(line);
  ASSERT_EQ(0, r.exit_code) << r.output;
  // Every line is whole and labelled with the worker that wrote it.
  CommandResult mixed = RunCommand("grep -c -v -E '^\\[w([0-3])\\] w\\1 0{96}$' " + out);
  EXPECT_EQ("0\n", mixed.output);
  for (int i = 0; i < 4; ++i) {
    // Built by append: GCC 12 at -O3 reports a false -Wrestrict on `"w" + std::to_string(i)`.
    std::string w = std::string("w").append(std::to_string(i));
    std::string got =
        RunCommand("grep '^\\[" + w + "\\] ' " + out + " | cut -c6- | sha256sum").output;
    std::string want = RunCommand("yes \"" + w +
                                  " $(printf %096d 0)\" | head -c 100000000 | "
                                  "sha256sum")
                           .output;
    EXPECT_EQ(want, got) << w;
  }
  RunCommand("rm -f " + out);
}

// The connection holder (docs/decisions.md, "Warm connections"), each test with a PODRUN_HOME of
// its own, so that its holder is its own.
class ExecHolderTest : public ExecTest {
 protected:
  void SetUp() override {
    home_ = ::testing::TempDir() + "/exec-holder-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    RunCommand("rm -rf " + home_ + " && mkdir -m 700 -p " + home_);  // private, or no holder
  }
  void TearDown() override {
    for (pid_t pid : Holders()) ::kill(pid, SIGTERM);
    WaitUntil([&] { return Holders().empty(); }, std::chrono::seconds(10));
  }

  // `podrun exec` with this test's PODRUN_HOME and the given variables.
  CommandResult HeldExec(const std::string& env, const std::string& options,
                         const std::string& command, bool merge_stderr = true) {
    return RunCommand("env PODRUN_HOME=" + home_ + " " + env + " " + ExecLine(options, command),
                      merge_stderr);
  }
  // This test's holder processes (by their PODRUN_HOME).
  std::vector<pid_t> Holders() const { return PodrunProcesses("podrun __holder", home_); }
  std::string HolderDir() const { return home_ + "/holder"; }

  // Every SSH connection the workers' sshd hold now, as "wI <peer address:port>", seen inside
  // the pod's own network namespaces.
  static std::set<std::string> SshdConnections() {
    std::set<std::string> peers;
    for (int i = 0; i < kWorkers; ++i) {
      CommandResult r = pod_->Exec(i, "ss -Htn state established '( sport = :22 )'");
      std::istringstream in(r.output);
      for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
        if (!w.empty()) peers.insert("w" + std::to_string(i) + " " + w.back());
      }
    }
    return peers;
  }

  std::string home_;
};

TEST_F(ExecHolderTest, SecondExecReusesTheConnections) {
  CommandResult first = HeldExec("", "", "hostname", /*merge_stderr=*/false);
  ASSERT_EQ(0, first.exit_code) << first.output;
  ASSERT_EQ(1u, Holders().size());
  const std::set<std::string> before = SshdConnections();
  CommandResult second = HeldExec("", "", "hostname", /*merge_stderr=*/false);
  ASSERT_EQ(0, second.exit_code) << second.output;
  for (int i = 0; i < kWorkers; ++i) {
    std::string line = "[w" + std::to_string(i) + "] w" + std::to_string(i) + "\n";
    EXPECT_NE(std::string::npos, second.output.find(line)) << second.output;
  }
  // No worker saw a new connection: every one the second exec used was there before it.
  const std::set<std::string> after = SshdConnections();
  for (const std::string& peer : after) EXPECT_TRUE(before.count(peer)) << "new: " << peer;
  EXPECT_GE(after.size(), size_t{kWorkers});
  // Exit codes, stderr and JSON are as without the holder.
  CommandResult json = HeldExec("", "-w 1,3 --json", "hostname; echo e >&2; exit 4", false);
  EXPECT_EQ(1, json.exit_code);
  EXPECT_NE(std::string::npos, json.output.find("\"stdout\":\"w3\\n\"")) << json.output;
  EXPECT_NE(std::string::npos, json.output.find("\"stderr\":\"e\\n\"")) << json.output;
  EXPECT_NE(std::string::npos, json.output.find("\"exit_code\":4")) << json.output;
}

TEST_F(ExecHolderTest, SocketAndDirectoryArePrivateAndNothingSecretIsWritten) {
  ASSERT_EQ(0, HeldExec("", "-w 0-1", "true").exit_code);
  ASSERT_EQ(1u, Holders().size());
  struct stat dir {};
  ASSERT_EQ(0, ::lstat(HolderDir().c_str(), &dir));
  EXPECT_TRUE(S_ISDIR(dir.st_mode));
  EXPECT_EQ(0700u, dir.st_mode & 0777);
  EXPECT_EQ(::geteuid(), dir.st_uid);
  struct stat socket {};
  ASSERT_EQ(0, ::lstat((HolderDir() + "/holder.sock").c_str(), &socket));
  EXPECT_TRUE(S_ISSOCK(socket.st_mode));
  EXPECT_EQ(0u, socket.st_mode & 077);
  EXPECT_EQ(::geteuid(), socket.st_uid);
  // Only the socket, the lock and the log; none holds key material.
  const std::string key = ReadTextFile(pod_->identity());
  ASSERT_NE(std::string::npos, key.find("PRIVATE KEY"));
  for (const auto& entry : std::filesystem::recursive_directory_iterator(home_)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().parent_path() == HolderDir()) {
      EXPECT_TRUE(name == "holder.sock" || name == "holder.lock" || name == "holder.log") << name;
    }
    if (!entry.is_regular_file()) continue;
    const std::string text = ReadTextFile(entry.path().string());
    EXPECT_EQ(std::string::npos, text.find("PRIVATE KEY")) << entry.path();
    EXPECT_EQ(std::string::npos, text.find(key.substr(40, 60))) << entry.path();
  }
}

TEST_F(ExecHolderTest, IdleTimeoutClosesTheConnectionsAndTheHolder) {
  const std::set<std::string> baseline = SshdConnections();
  ASSERT_EQ(0, HeldExec("PODRUN_PERSIST_SECONDS=1", "-w 2-3", "true").exit_code);
  EXPECT_TRUE(WaitUntil([&] { return Holders().empty(); }, std::chrono::seconds(60)))
      << ReadTextFile(HolderDir() + "/holder.log");
  EXPECT_FALSE(std::filesystem::exists(HolderDir() + "/holder.sock"));
  // The connections it held are closed on the workers too.
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (const std::string& peer : SshdConnections()) {
          if (!baseline.count(peer)) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  EXPECT_NE(std::string::npos,
            ReadTextFile(HolderDir() + "/holder.log").find("exiting: nothing held"));
}

TEST_F(ExecHolderTest, KilledHolderIsReplacedAndTheNextExecWorks) {
  ASSERT_EQ(0, HeldExec("", "-w 0-3", "true").exit_code);
  std::vector<pid_t> holders = Holders();
  ASSERT_EQ(1u, holders.size());
  ASSERT_EQ(0, ::kill(holders[0], SIGKILL));
  ASSERT_TRUE(WaitUntil([&] { return Holders().empty(); }, std::chrono::seconds(10)));
  EXPECT_TRUE(std::filesystem::exists(HolderDir() + "/holder.sock"));  // stale, left behind
  CommandResult r = HeldExec("", "-w 0-3", "hostname", /*merge_stderr=*/false);
  EXPECT_EQ(0, r.exit_code) << r.output;
  for (int i = 0; i < 4; ++i) {
    std::string line = "[w" + std::to_string(i) + "] w" + std::to_string(i) + "\n";
    EXPECT_NE(std::string::npos, r.output.find(line)) << r.output;
  }
  holders = Holders();
  ASSERT_EQ(1u, holders.size());  // a new one, which serves the next command
  EXPECT_EQ(0, HeldExec("", "-w 0-3", "true").exit_code);
  EXPECT_EQ(holders, Holders());
}

TEST_F(ExecHolderTest, ChangedHostKeyIsRefusedThroughTheHolder) {
  // The holder keeps a connection to worker 4 made with the pod's known_hosts...
  ASSERT_EQ(0, HeldExec("", "-w 4", "true").exit_code);
  ASSERT_EQ(1u, Holders().size());
  // ...which a known_hosts where worker 4 carries another key does not get.
  const std::string dir = home_ + "/changed-key";
  const std::string fingerprint = KnownHostsWithAnotherKeyForW4(dir);
  const std::string address = pod_->address(4);
  pod_->Exec(4, "rm -f /tmp/ran-held");
  CommandResult r =
      RunCommand("env PODRUN_HOME=" + home_ + " " + PODRUN_BINARY + " exec --hosts @" +
                 pod_->host_file() + " -i " + pod_->identity() + " --known-hosts " + dir +
                 "/known_hosts -w 4 -- touch /tmp/ran-held");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("w4 (" + pod_->hosts()[4])) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("HOST KEY CHANGED for " + address)) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("ssh-ed25519")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(fingerprint)) << r.output << fingerprint;
  EXPECT_NE(0, pod_->Exec(4, "test -e /tmp/ran-held").exit_code);
  // The holder made that refusal (the command asked it), and still serves.
  EXPECT_NE(std::string::npos,
            ReadTextFile(HolderDir() + "/holder.log").find("HOST KEY CHANGED for " + address));
  EXPECT_EQ(1u, Holders().size());
}

// The agent's tunnel goes through the holder too: after a launch, `status` and `logs` of the job
// reach the agents over the kept connections (no handshake, no new connection on any worker).
TEST_F(ExecHolderTest, StatusAndLogsOfAJobReachTheAgentsOverKeptConnections) {
  const std::string spec = home_ + "/held.yaml";
  {
    std::ofstream out(spec);
    out << "name: held\nrun: |\n  echo held-out-$(hostname)\n  sleep 120\n";
  }
  const std::string podrun = "env PODRUN_HOME=" + home_ + " " + PODRUN_BINARY;
  CommandResult launch =
      RunCommand(podrun + " launch " + spec + " --hosts @" + pod_->host_file() + " -i " +
                 pod_->identity() + " --known-hosts " + pod_->known_hosts() + " -w 5-6 -d");
  ASSERT_EQ(0, launch.exit_code) << launch.output;
  ASSERT_EQ(1u, Holders().size()) << launch.output;
  CommandResult first = RunCommand(podrun + " status held --json", /*merge_stderr=*/false);
  ASSERT_EQ(0, first.exit_code) << first.output;
  const std::set<std::string> before = SshdConnections();
  // sshd logs each login ("Accepted publickey for ..."): a command that connected on its own,
  // even for a moment, leaves one there.
  auto logins = [&] {
    return RunCommand("cat " + pod_->dir() + "/w5/sshd.log " + pod_->dir() +
                          "/w6/sshd.log | grep -c 'Accepted publickey'",
                      false)
        .output;
  };
  const std::string logins_before = logins();
  ASSERT_NE("0\n", logins_before);
  CommandResult status = RunCommand(podrun + " status held", /*merge_stderr=*/false);
  EXPECT_EQ(0, status.exit_code) << status.output;
  EXPECT_NE(std::string::npos, status.output.find("running")) << status.output;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return RunCommand(podrun + " logs held -w 6").output.find("held-out-w6") !=
               std::string::npos;
      },
      std::chrono::seconds(30)));
  const std::set<std::string> after = SshdConnections();
  for (const std::string& peer : after) EXPECT_TRUE(before.count(peer)) << "new: " << peer;
  EXPECT_EQ(logins_before, logins());
  const std::string log = ReadTextFile(HolderDir() + "/holder.log");
  EXPECT_NE(std::string::npos, log.find("@" + pod_->address(5) + ":")) << log;
  CommandResult stop = RunCommand(podrun + " stop held");
  EXPECT_EQ(0, stop.exit_code) << stop.output;
  EXPECT_EQ(1u, Holders().size());
}

TEST_F(ExecHolderTest, NoPersistLeavesNoHolder) {
  ASSERT_EQ(0, HeldExec("", "--no-persist -w 0", "true").exit_code);
  ASSERT_EQ(0, HeldExec("PODRUN_PERSIST=0", "-w 0", "true").exit_code);
  EXPECT_TRUE(Holders().empty());
  EXPECT_FALSE(std::filesystem::exists(HolderDir()));
}

}  // namespace
}  // namespace podrun::testing

namespace podrun::testing {
namespace {

TEST(ExecLocal, RunsOnEveryLocalWorkerInItsOwnHome) {
  std::string home = ::testing::TempDir() + "/podrun-exec-local-home";
  RunCommand("rm -rf " + home);
  CommandResult r =
      RunCommand("env PODRUN_HOME=" + home + " " + PODRUN_BINARY +
                     " exec --local 3 -- 'echo $HOME; test $HOME != " + home + "/local/w1'",
                 /*merge_stderr=*/false);
  EXPECT_EQ(1, r.exit_code) << r.output;
  for (int i = 0; i < 3; ++i) {
    std::string line = "[w" + std::to_string(i) + "] " + home + "/local/w" + std::to_string(i);
    EXPECT_NE(std::string::npos, r.output.find(line)) << r.output;
  }
}

}  // namespace
}  // namespace podrun::testing
