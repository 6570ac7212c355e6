// Integration tests of jump hosts done in process (-J, ssh_config's ProxyJump) and of
// ProxyCommand failures, on a 4-worker testpod (pod id 60) whose workers 1-3 drop every packet
// to this host (a blackhole route in their namespaces) while worker 0 still reaches them: the
// pod of TPU VMs with internal IPs only, worker 0 its bastion. podrun runs with a PATH that
// holds no `ssh`, and the jump host must see one connection from this host per command.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 60;

std::string Scratch() { return ::testing::TempDir() + "/podrun-jump-test"; }
std::string Home() { return Scratch() + "/home"; }
std::string NoSshPath() { return Scratch() + "/bin-without-ssh"; }

class JumpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Scratch());
    std::filesystem::create_directories(NoSshPath());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
    // Workers 1.. cannot answer this host (the bridge's address), only each other.
    for (int i = 1; i < kWorkers; ++i) {
      CommandResult r = pod_->Exec(i, "ip route add blackhole " + HostAddress() + "/32");
      ASSERT_EQ(0, r.exit_code) << r.output;
    }
    // `ProxyJump w0` for every worker (w0 itself included: a jump host's ProxyJump naming
    // itself is ignored for it), then the pod's own entries.
    std::ofstream(JumpConfig()) << "Host w*\n  ProxyJump w0\n" << ReadTextFile(pod_->ssh_config());
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static std::string HostAddress() { return "10.233." + std::to_string(pod_->id()) + ".1"; }
  static std::string JumpConfig() { return Scratch() + "/ssh_config"; }
  static std::string Names() { return "w0,w1,w2,w3"; }

  // podrun with its own home and no `ssh` anywhere on PATH.
  static std::string Podrun() {
    return "env PATH=" + NoSshPath() + " PODRUN_HOME=" + Home() + " " + PODRUN_BINARY;
  }
  // Pod options: the pod's addresses and -J root@<w0>.
  // --no-persist: these tests count one command's own connections to the jump host; a holder
  // would keep an exec's for the next command (and count them in the next test).
  static std::string WithJumpOption() {
    return " --hosts @" + pod_->host_file() + " -i " + pod_->identity() + " --known-hosts " +
           pod_->known_hosts() + " -J root@" + pod_->address(0) + " --no-persist";
  }
  // Pod options: the workers' names and the ssh_config with ProxyJump.
  static std::string WithProxyJumpConfig() {
    return " --hosts " + Names() + " -F " + JumpConfig() + " --known-hosts " + pod_->known_hosts() +
           " --no-persist";
  }

  // Established connections from this host to worker 0's sshd, as worker 0 sees them.
  static int ConnectionsFromHostToW0() {
    CommandResult r = pod_->Exec(0, "ss -Htn state established '( sport = :22 )' | grep -c ' " +
                                        HostAddress() + ":' || true");
    return std::atoi(r.output.c_str());
  }

  // Runs `command` while sampling ConnectionsFromHostToW0 every 100 ms; returns its result and
  // sets *most to the largest count seen.
  static CommandResult RunCounting(const std::string& command, int* most) {
    std::atomic<bool> done{false};
    std::atomic<int> peak{0};
    std::thread sampler([&] {
      while (!done) {
        int n = ConnectionsFromHostToW0();
        if (n > peak) peak = n;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    CommandResult r = RunCommand(command);
    done = true;
    sampler.join();
    *most = peak;
    return r;
  }

  static std::string WriteSpec(const std::string& name, const std::string& run) {
    std::string path = Scratch() + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\nrun: |\n  " << run << "\n";
    return path;
  }

  static void ExpectEveryWorkerSaidItsName(const std::string& output) {
    for (int i = 0; i < kWorkers; ++i) {
      std::string line = "[w" + std::to_string(i) + "] w" + std::to_string(i) + "\n";
      EXPECT_NE(std::string::npos, output.find(line)) << output;
    }
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> JumpTest::pod_;

TEST_F(JumpTest, WorkersAreUnreachableDirectly) {
  CommandResult r = RunCommand(Podrun() + " exec --hosts @" + pod_->host_file() + " -i " +
                               pod_->identity() + " --known-hosts " + pod_->known_hosts() +
                               " -w 0,2 --connect-timeout 2 --no-persist -- hostname");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] w0")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("w2 (root@" + pod_->address(2) + ")")) << r.output;
}

TEST_F(JumpTest, ExecThroughJumpOption) {
  int most = 0;
  CommandResult r =
      RunCounting(Podrun() + " exec" + WithJumpOption() + " -- 'hostname; sleep 2'", &most);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ExpectEveryWorkerSaidItsName(r.output);
  EXPECT_EQ(1, most) << "connections from this host to the jump host";
}

TEST_F(JumpTest, ExecThroughProxyJumpInSshConfig) {
  int most = 0;
  CommandResult r =
      RunCounting(Podrun() + " exec" + WithProxyJumpConfig() + " -- 'hostname; sleep 2'", &most);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ExpectEveryWorkerSaidItsName(r.output);
  EXPECT_EQ(1, most) << "connections from this host to the jump host";
}

TEST_F(JumpTest, LaunchThroughJumpOption) {
  std::string spec = WriteSpec("jump-launch", "hostname; sleep 2");
  int most = 0;
  CommandResult r = RunCounting(Podrun() + " launch " + spec + WithJumpOption(), &most);
  ASSERT_EQ(0, r.exit_code) << r.output;
  ExpectEveryWorkerSaidItsName(r.output);
  EXPECT_EQ(1, most) << "connections from this host to the jump host";
}

TEST_F(JumpTest, DetachedLaunchThroughProxyJumpThenLogs) {
  std::string spec = WriteSpec("jump-detached", "hostname");
  int most = 0;
  CommandResult r =
      RunCounting(Podrun() + " launch " + spec + WithProxyJumpConfig() + " -d", &most);
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ(1, most) << "connections from this host to the jump host";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("job: ([0-9a-f-]+)"))) << r.output;
  // The job record keeps the ssh_config: logs reach the agents through the jump host too.
  CommandResult logs = RunCommand(Podrun() + " logs " + m[1].str() + " -f");
  ASSERT_EQ(0, logs.exit_code) << logs.output;
  ExpectEveryWorkerSaidItsName(logs.output);
}

TEST_F(JumpTest, FailingProxyCommandIsTheWorkersErrorNotASignal) {
  std::string config = Scratch() + "/ssh_config_proxycommand";
  std::ofstream(config) << "Host w1\n  ProxyCommand /nonexistent %h %p\n"
                        << ReadTextFile(pod_->ssh_config());
  CommandResult r = RunCommand(Podrun() + " exec --hosts w0,w1 -F " + config + " --known-hosts " +
                               pod_->known_hosts() + " -- hostname");
  EXPECT_EQ(3, r.exit_code) << r.output;  // not 141 (SIGPIPE)
  EXPECT_NE(std::string::npos, r.output.find("[w0] w0")) << r.output;
  EXPECT_TRUE(
      std::regex_search(r.output, std::regex("w1 \\(w1\\): .*ProxyCommand '/nonexistent " +
                                             pod_->address(1) + " 22' exited with status 127")))
      << r.output;
}

TEST_F(JumpTest, UnreachableJumpHostIsNamed) {
  CommandResult r =
      RunCommand(Podrun() + " exec --hosts @" + pod_->host_file() + " -i " + pod_->identity() +
                 " --known-hosts " + pod_->known_hosts() + " -J root@" + pod_->address(3) +
                 " -w 1,2 --connect-timeout 2 -- hostname");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("jump host root@" + pod_->address(3))) << r.output;
}

TEST_F(JumpTest, JumpHostKeyIsCheckedLikeAnyHosts) {
  // A known_hosts that knows the workers but not the jump host, with --strict-host-keys.
  std::string known = Scratch() + "/known_hosts_without_w0";
  std::ostringstream kept;
  std::istringstream in(ReadTextFile(pod_->known_hosts()));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(pod_->address(0) + " ", 0) != 0 && line.rfind("w0 ", 0) != 0) {
      kept << line << "\n";
    }
  }
  std::ofstream(known) << kept.str();
  CommandResult r =
      RunCommand(Podrun() + " exec --hosts @" + pod_->host_file() + " -i " + pod_->identity() +
                 " --known-hosts " + known + " --strict-host-keys -J root@" + pod_->address(0) +
                 " -w 1 -- hostname");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("jump host root@" + pod_->address(0))) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("[w1] w1")) << r.output;
}

}  // namespace
}  // namespace podrun::testing
