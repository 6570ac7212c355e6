// Integration tests of the spec's `sync` on a real 8-worker testpod (docs/reference.md, the spec's
// `sync`; docs/design.md decision 11): a cold launch sends the agent over the uplink about once
// (the workers lend it to each other); every workdir matches the local tree byte for byte, ignored
// files and .git absent; the bytes this host sends onto the pod's bridge stay under twice the
// payload (the workers relay to each other), and after a one-file change under twice that file
// plus the manifest; a file deleted here disappears there, a file the job wrote stays; a worker
// whose peers cannot reach it gets the files through its own connection, and the launch says so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 8;
constexpr int kPodId = 26;
constexpr size_t kBigFile = 8 << 20;

std::string Dir() { return ::testing::TempDir() + "/podrun-sync-test"; }
std::string Tree() { return Dir() + "/project"; }

uint64_t BridgeTxBytes(int pod_id) {
  std::ifstream in("/sys/class/net/prbr" + std::to_string(pod_id) + "/statistics/tx_bytes");
  uint64_t bytes = 0;
  in >> bytes;
  return bytes;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

class SyncTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Tree());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static CommandResult Launch(const std::string& spec) {
    return RunCommand("env PODRUN_HOME=" + Dir() + "/home " + std::string(PODRUN_BINARY) +
                      " launch " + spec + " --hosts @" + pod_->host_file() + " -i " +
                      pod_->identity() + " --known-hosts " + pod_->known_hosts());
  }
  static std::string Spec(const std::string& run) {
    const std::string path = Dir() + "/train.yaml";
    std::ofstream(path) << "sync: project\nworkdir: ~/work\nrun: " << run << "\n";
    return path;
  }
  // The listing of a tree as "sha256  ./path" lines, sorted (files and symlinks).
  static std::string LocalListing() {
    return RunCommand("cd " + Tree() +
                      " && find . -path ./.git -prune -o \\( -type f -o -type l \\) -print0 | "
                      "grep -zv -e '^./build/' -e '\\.log$' -e '^./secret.key$' | sort -z | "
                      "xargs -0 sha256sum")
        .output;
  }
  static std::string WorkerListing(int i) {
    return pod_
        ->Exec(i,
               "cd ~/work && find . \\( -type f -o -type l \\) -print0 | sort -z | "
               "xargs -0 sha256sum")
        .output;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> SyncTest::pod_;

TEST_F(SyncTest, TreesMatchOnEveryWorkerAndTheUplinkCarriesAboutOneCopy) {
  WriteFile(Tree() + "/train.py", "print('hello')\n");
  WriteFile(Tree() + "/model/big.bin", RandomBytes(kBigFile, 1));
  WriteFile(Tree() + "/model/same.bin", RandomBytes(kBigFile / 4, 2));
  WriteFile(Tree() + "/model/copy.bin", RandomBytes(kBigFile / 4, 2));  // same content: once
  WriteFile(Tree() + "/data/empty", "");
  WriteFile(Tree() + "/run.sh", "#!/bin/sh\necho run\n");
  std::filesystem::permissions(Tree() + "/run.sh", std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
  std::filesystem::create_symlink("train.py", Tree() + "/link.py");
  WriteFile(Tree() + "/.gitignore", "build/\n*.log\n");
  WriteFile(Tree() + "/.podrunignore", "secret.key\n");
  WriteFile(Tree() + "/build/out.o", RandomBytes(1 << 20, 3));
  WriteFile(Tree() + "/train.log", "ignored\n");
  WriteFile(Tree() + "/secret.key", "ignored\n");
  ASSERT_EQ(0, RunCommand("cd " + Tree() + " && git init -q . && git add train.py").exit_code);
  const uint64_t payload = kBigFile + kBigFile / 4 + 200;
  // The agents are installed first (their bytes are not the sync's): sent to one worker, the
  // others fetch the binary from their peers, so the uplink carries about one gzipped agent.
  const std::string warm = Dir() + "/warm.yaml";
  std::ofstream(warm) << "run: 'true'\n";
  const uint64_t cold0 = BridgeTxBytes(pod_->id());
  CommandResult cold = Launch(warm);
  const uint64_t cold_sent = BridgeTxBytes(pod_->id()) - cold0;
  ASSERT_EQ(0, cold.exit_code) << cold.output;
  EXPECT_NE(std::string::npos, cold.output.find("uploaded to 1, from peers to 7")) << cold.output;
  const uint64_t agent_gz =
      std::stoull(RunCommand("gzip -c " + std::string(PODRUN_AGENT) + " | wc -c").output);
  std::cerr << "cold launch: " << cold_sent << " bytes onto the bridge; gzipped agent " << agent_gz
            << "\n";
  EXPECT_LT(cold_sent, 3 * agent_gz) << cold.output;

  const uint64_t tx0 = BridgeTxBytes(pod_->id());
  CommandResult first = Launch(Spec("test -x run.sh && readlink link.py && echo job > job.out"));
  const uint64_t sent = BridgeTxBytes(pod_->id()) - tx0;
  ASSERT_EQ(0, first.exit_code) << first.output;
  EXPECT_NE(std::string::npos, first.output.find("relayed between workers")) << first.output;
  EXPECT_NE(std::string::npos, first.output.find("[w7] train.py")) << first.output;
  const std::string expected = LocalListing();
  ASSERT_NE(std::string::npos, expected.find("./model/big.bin")) << expected;
  for (int i = 0; i < kWorkers; ++i) {
    std::string got = WorkerListing(i);
    // The job's own file is there too; the rest is the tree exactly.
    EXPECT_NE(std::string::npos, got.find("./job.out")) << "w" << i << "\n" << got;
    std::string without_job;
    std::istringstream lines(got);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("./job.out") == std::string::npos) without_job += line + "\n";
    }
    EXPECT_EQ(expected, without_job) << "w" << i;
  }
  std::cerr << "first sync: " << sent << " bytes onto the bridge for a payload of " << payload
            << "\n";
  EXPECT_LT(sent, 2 * payload) << first.output;

  // One file changed, one deleted: only that file (and the manifest) crosses the uplink again.
  WriteFile(Tree() + "/train.py", "print('changed')\n" + RandomBytes(1 << 20, 4));
  std::filesystem::remove(Tree() + "/data/empty");
  const uint64_t tx1 = BridgeTxBytes(pod_->id());
  CommandResult second =
      Launch(Spec("cat job.out; test -e data/empty; echo gone $?; head -c 16 train.py"));
  const uint64_t sent_again = BridgeTxBytes(pod_->id()) - tx1;
  ASSERT_EQ(0, second.exit_code) << second.output;
  std::cerr << "second sync: " << sent_again << " bytes onto the bridge\n";
  EXPECT_LT(sent_again, 2 * ((1 << 20) + 64 * 1024)) << second.output;
  EXPECT_NE(std::string::npos, second.output.find("[w5] job")) << second.output;     // kept
  EXPECT_NE(std::string::npos, second.output.find("[w5] gone 1")) << second.output;  // deleted
  EXPECT_NE(std::string::npos, second.output.find("[w5] print('changed')")) << second.output;
  EXPECT_NE(std::string::npos, second.output.find("8 deleted")) << second.output;
}

TEST_F(SyncTest, AWorkerThatPeersCannotReachGetsAgentAndFilesThroughItsOwnConnection) {
  WriteFile(Tree() + "/fallback.bin", RandomBytes(1 << 20, 5));
  // Worker 3 cannot reach its peers (this host still can), and lacks the agent, as does worker 5.
  std::string cut, heal;
  for (int i = 0; i < kWorkers; ++i) {
    if (i == 3) continue;
    cut += "ip route add prohibit " + pod_->address(i) + "/32; ";
    heal += "ip route del prohibit " + pod_->address(i) + "/32; ";
  }
  ASSERT_EQ(0, pod_->Exec(3, cut).exit_code);
  for (int i : {3, 5}) {
    // Only that worker's agent (pkill would see every worker's: they share the pid namespace).
    RunCommand("for p in $(ip netns pids pr" + std::to_string(pod_->id()) + "-w" +
               std::to_string(i) +
               "); do tr '\\0' ' ' < /proc/$p/cmdline | grep -q 'podrun-agent-[0-9a-f]* serve' "
               "&& kill $p; done; true");
    pod_->Exec(i, "rm -rf ~/.podrun/bin");
  }
  CommandResult r = Launch(Spec("sha256sum fallback.bin"));
  pod_->Exec(3, heal);
  ASSERT_EQ(0, r.exit_code) << r.output;
  // One of the two got the agent first; the other could not fetch it from that peer.
  EXPECT_NE(std::string::npos, r.output.find("uploaded to 2, from peers to ")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("; 1 could not fetch it from a peer)")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("could not fetch from a peer")) << r.output;
  const std::string sum = RunCommand("cd " + Tree() + " && sha256sum fallback.bin").output;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(std::string::npos, r.output.find("[w" + std::to_string(i) + "] " + sum.substr(0, 64)))
        << r.output;
  }
}

// The README's walk-through spec (examples/bert-v2-32), as far as this machine can take it: no
// TPU, no network, no gcsfuse, so its pod, setup, mounts and run are replaced; what it syncs,
// where, the setup inputs and the env stay.
TEST_F(SyncTest, TheBertExampleShipsItsDirectory) {
  const std::string dir = Dir() + "/bert-v2-32";
  ASSERT_EQ(0, RunCommand("rm -rf " + dir + " && cp -r " + std::string(PODRUN_SOURCE_DIR) +
                          "/examples/bert-v2-32 " + dir)
                   .exit_code);
  std::ifstream in(dir + "/bert.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string spec = text.str();
  auto cut = [&](const std::string& from, const std::string& to) {
    const size_t a = spec.find(from), b = spec.find(to, a);
    ASSERT_NE(std::string::npos, a) << from;
    ASSERT_NE(std::string::npos, b) << to;
    spec.erase(a, b - a);
  };
  cut("pod:\n", "workdir:");
  cut("setup: |", "setup_inputs:");
  cut("mounts:\n", "env:");
  cut("run: |", "on_failure:");
  spec += "setup: head -c 0 requirements.txt\nrun: test -x pretrain.sh && echo \"$MODEL_DIR\"\n";
  std::ofstream(dir + "/bert.yaml") << spec;
  CommandResult r = Launch(dir + "/bert.yaml");
  ASSERT_EQ(0, r.exit_code) << spec << "\n" << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("[w7] gs://jestimator_example/experiments/pretrain/bert-base"))
      << r.output;
  for (const char* file : {"requirements.txt", "pretrain.sh", "bert.yaml"}) {
    EXPECT_EQ(0, RunCommand("cmp " + dir + "/" + file + " " + pod_->dir() + "/w2/home/bert/" + file)
                     .exit_code)
        << file;
  }
}

// A worker whose every SSH command takes 17 s to start (a slow .bashrc) holds the launch up,
// but costs the other workers nothing: their tunnels, idle meanwhile, stay up (gRPC keepalive
// pings on idle channels were never sent, and their watchdog closed them after 15 s), and its
// log stream is not given up while its login shell starts.
TEST_F(SyncTest, ASlowWorkerCostsTheOthersNothing) {
  const std::string spec = Dir() + "/slow.yaml";
  std::ofstream(spec) << "run: echo started\n";
  ASSERT_EQ(0, Launch(spec).exit_code);  // every agent installed and running
  const std::string bashrc = pod_->dir() + "/w7/home/.bashrc";
  RunCommand("echo 'sleep 17  # podrun-slow-login' >> " + bashrc);
  CommandResult r = Launch(spec);
  RunCommand("sed -i '/podrun-slow-login/d' " + bashrc);
  ASSERT_EQ(0, r.exit_code) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(std::string::npos, r.output.find("[w" + std::to_string(i) + "] started")) << r.output;
  }
}

// No lender outlives the connect phase (worker/sync/binary_relay.h): with the agent installed on
// every worker but one from a peer, nothing but sshd listens on any worker as the job starts
// (the launcher still connected) nor once `launch -d` returned (the job runs on).
TEST_F(SyncTest, OnlySshdListensOnTheWorkersOnceADetachedLaunchReturned) {
  for (int i = 0; i < kWorkers; ++i) {
    // Only that worker's agent (pkill would see every worker's: they share the pid namespace).
    RunCommand("for p in $(ip netns pids pr" + std::to_string(pod_->id()) + "-w" +
               std::to_string(i) +
               "); do tr '\\0' ' ' < /proc/$p/cmdline | grep -q 'podrun-agent-[0-9a-f]* serve' "
               "&& kill $p; done; true");
    pod_->Exec(i, "rm -rf ~/.podrun/bin /tmp/podrun-listeners-at-start");
  }
  const std::string spec = Dir() + "/detached.yaml";
  // The job lists the listeners as it starts, while the launcher is still connected.
  std::ofstream(spec) << "run: ss -ltnpH > /tmp/podrun-listeners-at-start; exec -a "
                         "podrun-test-lend-detached sleep 120\n";
  CommandResult r = Launch(spec + " -d");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("uploaded to 1, from peers to 7")) << r.output;
  for (int i = 0; i < 2 * kWorkers; ++i) {
    const bool now = i < kWorkers;
    const std::string where = "w" + std::to_string(i % kWorkers) + (now ? " now" : " at start");
    CommandResult listeners =
        pod_->Exec(i % kWorkers, now ? "ss -ltnpH" : "cat /tmp/podrun-listeners-at-start");
    EXPECT_EQ(0, listeners.exit_code) << where << ": " << listeners.output;
    std::istringstream lines(listeners.output);
    int sshd = 0;
    for (std::string line; std::getline(lines, line);) {
      EXPECT_NE(std::string::npos, line.find("\"sshd\"")) << where << ": " << line;
      sshd += line.find("\"sshd\"") != std::string::npos ? 1 : 0;
    }
    EXPECT_GT(sshd, 0) << where << ": " << listeners.output;
  }
  std::smatch job;
  ASSERT_TRUE(std::regex_search(r.output, job, std::regex("job: ([0-9a-f-]+)"))) << r.output;
  CommandResult stop = RunCommand("env PODRUN_HOME=" + Dir() + "/home " +
                                  std::string(PODRUN_BINARY) + " stop " + job[1].str());
  EXPECT_EQ(0, stop.exit_code) << stop.output;
}

TEST_F(SyncTest, ASyncDirectoryThatDoesNotExistIsABadSpec) {
  const std::string path = Dir() + "/nowhere.yaml";
  std::ofstream(path) << "run: echo hi\nsync: does-not-exist\n";
  CommandResult r = Launch(path);
  EXPECT_EQ(2, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("nowhere.yaml:2:")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("does not exist")) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("[w")) << r.output;
}

}  // namespace
}  // namespace podrun::testing
