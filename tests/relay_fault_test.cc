// Real faults in the relays between workers, mid-transfer, on a real 8-worker testpod (pod id 28;
// docs/design.md decision 11). The relay tree of 8 is w0 -> w1..w4, w1 -> w5..w7, so w1 serves the
// sync to w5, w6 and w7. What the serving worker sends its peers is slowed (tc htb, 2 Mbit/s) so
// that a fault lands while the bytes flow, which the test sees on the fetching side (bytes
// received on its socket, or a growing temporary agent file) before striking: a serving
// agent SIGKILLed, and the peer link cut (routes prohibited both ways), each leave every worker
// with the tree byte for byte, the launch exits 0 and says the fetchers were sent the files
// through their own connection; a lender of the agent binary SIGKILLed mid-transfer leaves the
// fetchers to upload it for themselves, and the launch succeeds. Processes are found and counted
// in this pod's namespaces only (other pods share the pid namespace).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kWorkers = 8;
constexpr int kPodId = 28;
constexpr int kParent = 1;                  // serves w5..w7 in the relay tree of 8 (fanout 4)
constexpr size_t kBlob = 3 << 20;           // ~12 s to each of three children at 2 Mbit/s
constexpr uintmax_t kUnderWay = 128 << 10;  // bytes received: the transfer is under way

std::string Dir() { return ::testing::TempDir() + "/podrun-relay-fault-test"; }

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The launcher's own lines of `text` (not the job's), for the test's log.
std::string LauncherLines(const std::string& text) {
  std::istringstream in(text);
  std::string lines;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("podrun: ", 0) == 0) lines += "  " + line + "\n";
  }
  return lines;
}

class RelayFaultTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Dir());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
    // Every agent installed and running: the sync tests fault the sync, not the install.
    std::ofstream(Dir() + "/warm.yaml") << "run: 'true'\n";
    const pid_t warm = StartLaunch(Dir() + "/warm.yaml", Dir() + "/warm.out");
    if (WaitForExit(warm, 120s) != 0) ADD_FAILURE() << ReadTextFile(Dir() + "/warm.out");
  }
  static void TearDownTestSuite() { pod_.reset(); }
  void TearDown() override {
    for (int i = 0; i < kWorkers; ++i) pod_->Exec(i, "tc qdisc del dev eth0 root 2>/dev/null");
  }

  // Starts `podrun launch SPEC` in the background, its output (stderr merged) into `out`.
  static pid_t StartLaunch(const std::string& spec, const std::string& out) {
    return StartCommand("env PODRUN_HOME=" + Dir() + "/home " + std::string(PODRUN_BINARY) +
                        " launch " + spec + " --hosts @" + pod_->host_file() + " -i " +
                        pod_->identity() + " --known-hosts " + pod_->known_hosts() + " > " + out +
                        " 2>&1");
  }
  // The launcher's exit code once it ended within `limit`; else it is killed and -1 returned.
  static int WaitForExit(pid_t pid, std::chrono::seconds limit) {
    int status = -1;
    if (!WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, limit)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Worker i sends workers `to` (all its peers if empty) at most 2 Mbit/s: what it serves them,
  // not what it sends this host (its SSH connection) nor what it is sent. An htb qdisc on its
  // eth0 whose class 1:3, with a short queue (30 packets) of its own, takes those packets.
  static void Slow(int i, const std::vector<int>& to = {}) {
    const std::string net = "10.233." + std::to_string(pod_->id());
    std::string filters = "tc filter add dev eth0 parent 1: prio 1 protocol ip u32 match ip dst " +
                          net + ".1/32 flowid 1:1; ";
    for (int peer : to) {
      filters += "tc filter add dev eth0 parent 1: prio 2 protocol ip u32 match ip dst " +
                 pod_->address(peer) + "/32 flowid 1:3; ";
    }
    if (to.empty()) {
      filters += "tc filter add dev eth0 parent 1: prio 2 protocol ip u32 match ip dst " + net +
                 ".0/24 flowid 1:3; ";
    }
    CommandResult r = pod_->Exec(
        i,
        "set -e; tc qdisc replace dev eth0 root handle 1: htb default 1; "
        "tc class add dev eth0 parent 1: classid 1:1 htb rate 10gbit quantum 60000; "
        "tc class add dev eth0 parent 1: classid 1:3 htb rate 2mbit burst 32kbit quantum 1514; "
        "tc qdisc add dev eth0 parent 1:3 handle 30: pfifo limit 30; " +
            filters);
    ASSERT_EQ(0, r.exit_code) << r.output;
  }
  // Worker i's new packets are no longer slowed; those already queued still leave (a reset
  // behind the data is not dropped, as deleting the qdisc would).
  static void Unslow(int i) { pod_->Exec(i, "tc filter del dev eth0 parent 1: prio 2"); }
  // Waits until some worker in `workers` has received at least kUnderWay bytes on a connection
  // from worker `from` (a blob is under way: the manifest is far smaller). Blobs reach the cache
  // in chunks of 1 MiB (kPeerChunkSize), so the fetcher's sockets say it sooner than its files.
  static bool WaitForReceived(const std::vector<int>& workers, int from) {
    const std::regex received("bytes_received:([0-9]+)");
    return WaitUntil(
        [&] {
          for (int i : workers) {
            const std::string ss =
                RunCommand("ip netns exec pr" + std::to_string(pod_->id()) + "-w" +
                           std::to_string(i) + " ss -tinH state established dst " +
                           pod_->address(from))
                    .output;
            for (std::sregex_iterator m(ss.begin(), ss.end(), received), end; m != end; ++m) {
              if (std::stoull((*m)[1].str()) >= kUnderWay) return true;
            }
          }
          return false;
        },
        30s);
  }
  // Waits until some worker in `workers` holds a partial file under `sub` (of its home) of at
  // least kUnderWay bytes whose name contains `mark`: a transfer to it is under way.
  static bool WaitForPartial(const std::vector<int>& workers, const std::string& sub,
                             const std::string& mark) {
    return WaitUntil(
        [&] {
          for (int i : workers) {
            std::error_code ec;
            const std::string root = pod_->dir() + "/w" + std::to_string(i) + "/home/" + sub;
            for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
                 !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
              std::error_code size_ec;
              if (it->path().filename().string().find(mark) != std::string::npos &&
                  it->file_size(size_ec) >= kUnderWay && !size_ec) {
                return true;
              }
            }
          }
          return false;
        },
        30s);
  }
  // The processes of worker `i` (its namespace only) whose command line matches `pattern`
  // (grep -E): how many, after `action` ("true", "kill -9") was taken on each.
  static int ForEachIn(int i, const std::string& pattern, const std::string& action) {
    const std::string ns = "pr" + std::to_string(pod_->id()) + "-w" + std::to_string(i);
    return std::atoi(RunCommand("n=0; for p in $(ip netns pids " + ns +
                                "); do if tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -qE " +
                                ShellQuote(pattern) + "; then " + action +
                                " $p && n=$((n+1)); fi; done; echo $n")
                         .output.c_str());
  }
  static int CountIn(int i, const std::string& pattern) { return ForEachIn(i, pattern, "true"); }
  static int KillIn(int i, const std::string& pattern) { return ForEachIn(i, pattern, "kill -9"); }
  // A spec syncing `tree` (a directory of Dir()) into ~/work and running `run` there.
  static std::string Spec(const std::string& tree, const std::string& run) {
    const std::string path = Dir() + "/" + tree + ".yaml";
    std::ofstream(path) << "sync: " << tree << "\nworkdir: ~/work\nrun: " << run << "\n";
    return path;
  }
  // Writes the tree `name`: a small file and a big one of random bytes.
  static void WriteTree(const std::string& name, unsigned seed) {
    std::filesystem::create_directories(Dir() + "/" + name + "/data");
    std::ofstream(Dir() + "/" + name + "/train.py") << "print('" << name << "')\n";
    std::ofstream(Dir() + "/" + name + "/data/big.bin", std::ios::binary)
        << RandomBytes(kBlob, seed);
  }
  // Every worker's ~/work is the tree `name`, byte for byte ("sha256  ./path" listings).
  static void ExpectTreeEverywhere(const std::string& name) {
    const std::string listing = "find . -type f -print0 | sort -z | xargs -0 sha256sum";
    const std::string expected = RunCommand("cd " + Dir() + "/" + name + " && " + listing).output;
    ASSERT_NE(std::string::npos, expected.find("./data/big.bin")) << expected;
    for (int i = 0; i < kWorkers; ++i) {
      EXPECT_EQ(expected, pod_->Exec(i, "cd ~/work && " + listing).output) << "w" << i;
    }
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> RelayFaultTest::pod_;

// The agent serving w5..w7 their blobs (the BlobServer is a thread of it) is SIGKILLed while
// they fetch: they fall back to their own connections, w1 gets a new agent, and every workdir is
// the tree byte for byte.
TEST_F(RelayFaultTest, AServingAgentKilledMidTransferLeavesEveryWorkerTheTree) {
  WriteTree("killed", 11);
  Slow(kParent, {5, 6, 7});
  const auto began = Clock::now();
  const std::string out = Dir() + "/killed.out";
  const pid_t launcher = StartLaunch(Spec("killed", "sha256sum data/big.bin"), out);
  const bool under_way = WaitForReceived({5, 6, 7}, kParent);
  std::cerr << "under way after " << SecondsSince(began) << " s\n";
  // Still slow: the reset goes out behind the data queued before it (TearDown unslows).
  const int killed = under_way ? KillIn(kParent, "podrun-agent-[0-9a-f]* serve") : 0;
  const int code = WaitForExit(launcher, 120s);
  const std::string text = ReadTextFile(out);
  std::cerr << "killed a serving agent: launch took " << SecondsSince(began) << " s\n"
            << LauncherLines(text);
  ASSERT_TRUE(under_way) << text;
  EXPECT_EQ(1, killed) << text;
  ASSERT_EQ(0, code) << text;
  EXPECT_NE(std::string::npos, text.find("could not fetch from a peer (w")) << text;
  EXPECT_NE(std::string::npos, text.find(" from w1 (")) << text;
  EXPECT_NE(std::string::npos, text.find("through their own connections")) << text;
  ExpectTreeEverywhere("killed");
}

// The peer link between w1 and its children goes down while they fetch (packets to each other
// prohibited both ways; everyone still reaches this host): each child's fetch times out, it is
// sent the files through its own connection, and the launch says which link failed. Bounded by
// the fetch timeout (10 s, worker/rpc/sync_rpc.cc), not by the launch's.
TEST_F(RelayFaultTest, APeerLinkCutMidTransferFallsBackWithinTheFetchTimeout) {
  WriteTree("cut", 12);
  Slow(kParent, {5, 6, 7});
  std::string cut_children, heal_children, cut_parent, heal_parent;
  for (int child : {5, 6, 7}) {
    cut_parent += "ip route add prohibit " + pod_->address(child) + "/32; ";
    heal_parent += "ip route del prohibit " + pod_->address(child) + "/32; ";
  }
  cut_children = "ip route add prohibit " + pod_->address(kParent) + "/32";
  heal_children = "ip route del prohibit " + pod_->address(kParent) + "/32";
  const auto began = Clock::now();
  const std::string out = Dir() + "/cut.out";
  const pid_t launcher = StartLaunch(Spec("cut", "sha256sum data/big.bin"), out);
  const bool under_way = WaitForReceived({5, 6, 7}, kParent);
  std::cerr << "under way after " << SecondsSince(began) << " s\n";
  const auto cut_at = Clock::now();
  if (under_way) {
    pod_->Exec(kParent, cut_parent);
    for (int child : {5, 6, 7}) pod_->Exec(child, cut_children);
  }
  const int code = WaitForExit(launcher, 150s);
  const double after_cut = SecondsSince(cut_at);
  for (int child : {5, 6, 7}) pod_->Exec(child, heal_children);
  pod_->Exec(kParent, heal_parent);
  const std::string text = ReadTextFile(out);
  std::cerr << "cut a peer link: launch took " << SecondsSince(began) << " s, " << after_cut
            << " s after the cut\n"
            << LauncherLines(text);
  ASSERT_TRUE(under_way) << text;
  ASSERT_EQ(0, code) << text;
  EXPECT_LT(after_cut, 10 + 60) << text;  // the fetch timeout, and a loaded machine's slack
  EXPECT_NE(std::string::npos, text.find("could not fetch from a peer (w")) << text;
  EXPECT_NE(std::string::npos, text.find(" from w1 (")) << text;
  EXPECT_NE(std::string::npos, text.find("timed out")) << text;
  EXPECT_NE(std::string::npos, text.find("through their own connections")) << text;
  ExpectTreeEverywhere("cut");
}

// The lender of the agent binary (`podrun-agent lend`, on the worker that was sent it first) is
// SIGKILLed while its peers fetch from it: they upload the agent for themselves, and the launch
// succeeds on every worker.
TEST_F(RelayFaultTest, ALenderKilledMidTransferLeavesTheFetchersToUploadTheAgent) {
  for (int i = 0; i < kWorkers; ++i) {
    KillIn(i, "podrun-agent-[0-9a-f]* serve");
    pod_->Exec(i, "rm -rf ~/.podrun/bin");
    Slow(i);  // which worker is sent the agent first is not known: every one lends slowly
  }
  const auto began = Clock::now();
  const std::string spec = Dir() + "/lend.yaml";
  std::ofstream(spec) << "run: echo agent-ok\n";
  const std::string out = Dir() + "/lend.out";
  const pid_t launcher = StartLaunch(spec, out);
  // The first worker is sent the agent, starts it and lends it; then a fetch has begun once a
  // temporary agent file on another worker has grown (an upload makes one too, but it is done
  // before its worker lends).
  int lender = -1;
  WaitUntil(
      [&] {
        for (int i = 0; i < kWorkers && lender < 0; ++i) {
          if (CountIn(i, "podrun-agent-[0-9a-f]* lend") > 0) lender = i;
        }
        return lender >= 0;
      },
      60s);
  std::vector<int> others;
  for (int i = 0; i < kWorkers; ++i) {
    if (i != lender) others.push_back(i);
  }
  const bool under_way = lender >= 0 && WaitForPartial(others, ".podrun/bin", ".podrun-agent-");
  int killed = 0;
  for (int i = 0; i < kWorkers && under_way; ++i) {
    killed += KillIn(i, "podrun-agent-[0-9a-f]* lend");
  }
  for (int i = 0; i < kWorkers; ++i) Unslow(i);
  const int code = WaitForExit(launcher, 120s);
  const std::string text = ReadTextFile(out);
  std::cerr << "killed " << killed << " lender(s): launch took " << SecondsSince(began) << " s\n"
            << LauncherLines(text);
  ASSERT_TRUE(under_way) << text;
  EXPECT_GE(killed, 1) << text;
  ASSERT_EQ(0, code) << text;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      text, m,
      std::regex(
          R"(uploaded to (\d+), from peers to (\d+); (\d+) could not fetch it from a peer)")))
      << text;
  EXPECT_EQ(kWorkers, std::stoi(m[1]) + std::stoi(m[2])) << text;
  EXPECT_GE(std::stoi(m[1]), 2) << text;  // the first, and at least one whose fetch failed
  EXPECT_GE(std::stoi(m[3]), 1) << text;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(std::string::npos, text.find("[w" + std::to_string(i) + "] agent-ok")) << text;
  }
  EXPECT_EQ(0, pod_->CountProcesses("podrun-agent-[0-9a-f]* lend")) << text;
}

}  // namespace
}  // namespace podrun::testing
