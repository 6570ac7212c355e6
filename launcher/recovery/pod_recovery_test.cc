// Tests of recovery with an injected gcloud (tests/fake-gcloud in a temporary state directory;
// no pod needed): one describe per node however many workers ask (SourceStates), what
// PrepareRestart does with a preempted slice, a node someone else deleted, and podrun's own
// recreation left half done; the restart budget counted from typed attempt reasons.
#include "launcher/recovery/pod_recovery.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "launcher/recovery/restarts.h"
#include "launcher/recovery/source_states.h"
#include "launcher/spec/spec.h"
#include "launcher/ssh/ssh_reach.h"
#include "launcher/store/recovery_records.h"
#include "proto/run_program.h"

namespace podrun {
namespace {

namespace fs = std::filesystem;

class PodRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("pod-recovery-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "home");
    fs::permissions(dir_ / "home", fs::perms::owner_all);
    ::setenv("PODRUN_GCLOUD", Gcloud().c_str(), 1);
    ::setenv("FAKE_GCLOUD_STATE", dir_.c_str(), 1);
    ::setenv("PODRUN_HOME", (dir_ / "home").c_str(), 1);
    ::setenv("PODRUN_TPU_POLL_SECONDS", "1", 1);
    ::setenv("PODRUN_HOST_KEYS_WAIT_SECONDS", "0", 1);  // the fake's VMs publish no host key
    nlohmann::json config = {{"pool", nlohmann::json::array()},
                             {"create_seconds", 0},
                             {"queue_seconds", 0},
                             {"delete_seconds", 0}};
    for (int i = 1; i <= 8; ++i) config["pool"].push_back("10.9.0." + std::to_string(i));
    std::ofstream(dir_ / "config.json") << config.dump();
  }
  void TearDown() override {
    for (const char* name : {"PODRUN_GCLOUD", "FAKE_GCLOUD_STATE", "PODRUN_HOME",
                             "PODRUN_TPU_POLL_SECONDS", "PODRUN_HOST_KEYS_WAIT_SECONDS"}) {
      ::unsetenv(name);
    }
    fs::remove_all(dir_);
  }

  static std::string Gcloud() {
    return (fs::path(PODRUN_SOURCE_DIR) / "tests/fake-gcloud").string();
  }
  std::string Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {Gcloud()};
    argv.insert(argv.end(), args.begin(), args.end());
    ProgramResult r = RunProgram(argv);
    EXPECT_EQ(0, r.exit_code) << r.err;
    return r.out;
  }
  void Create(const std::string& node, const std::string& type) {
    Run({"compute", "tpus", "tpu-vm", "create", node, "--zone", "zone-a", "--accelerator-type",
         type, "--version", "base", "--spot"});
  }
  // gcloud calls of `verb` on `node` in calls.log.
  int Calls(const std::string& verb, const std::string& node) const {
    std::ifstream log(dir_ / "calls.log");
    int n = 0;
    for (std::string line; std::getline(log, line);) {
      nlohmann::json argv = nlohmann::json::parse(line);
      if (argv.size() > 4 && argv[3] == verb && argv[4] == node) ++n;
    }
    return n;
  }
  // A pod of `nodes` (each `per_node` workers, slice by slice) discovered with --tpu.
  static Pod TpuPod(const std::vector<std::string>& nodes, int per_node) {
    Pod pod;
    pod.cloud_tpu = true;
    pod.slices = static_cast<int>(nodes.size());
    int index = 0;
    for (size_t slice = 0; slice < nodes.size(); ++slice) {
      pod.sources.push_back({PodSourceKind::kTpuNode, {nodes[slice], "zone-a", std::nullopt}});
      for (int k = 0; k < per_node; ++k, ++index) {
        PodWorker w;
        w.index = index;
        w.host.host = "10.9.0." + std::to_string(index + 1);
        w.peer_address = w.host.host;
        w.slice = static_cast<int>(slice);
        pod.workers.push_back(w);
        pod.selected.push_back(index);
      }
    }
    return pod;
  }
  // A recorded job on `pod` whose spec has `create:` for `spec_tpu`, and its failed attempt 1.
  AttemptPlan Plan(JobStore& store, const Pod& pod, const std::string& spec_tpu) {
    const std::string text = "pod:\n  tpu: " + spec_tpu +
                             "\n  zone: zone-a\n  create: {accelerator_type: v4-16, version: "
                             "base, spot: true}\nrestarts: 3\nrun: true\n";
    JobRecord job;
    job.name = "j";
    job.pod = "tpu:" + spec_tpu;
    job.spec_text = text;
    job.spec_path = "j.yaml";
    for (const PodWorker& w : pod.workers) {
      job.hosts.push_back({w.index, "", w.host.host, 0, w.peer_address});
    }
    job = store.CreateJob(job);
    const int attempt = store.AddAttempt(job.id, pod.selected, AttemptReason::kLaunch);
    store.SetAttemptState(job.id, attempt, AttemptState::kFailed, 1, NowUnixNs());
    AttemptPlan plan;
    plan.job = job;
    plan.attempt = attempt;
    plan.spec = ParseSpecText(text, "j.yaml");
    plan.pod = pod;
    plan.pod.ssh.known_hosts = (dir_ / "known_hosts").string();
    plan.home = dir_ / "home";
    return plan;
  }
  static ProvisionWait NoWait() {
    return [](std::chrono::milliseconds) { return true; };
  }

  fs::path dir_;
};

TEST_F(PodRecoveryTest, FourLostWorkersOfOneNodeCostOneDescribe) {
  Create("node-4", "v4-32");
  Run({"--admin", "preempt", "node-4", "--zone", "zone-a"});
  const int before = Calls("describe", "node-4");
  SourceStates nodes(TpuPod({"node-4"}, 4), dir_ / "cache", std::chrono::seconds(60));
  std::vector<std::optional<std::string>> said(4);
  std::vector<std::thread> lost;
  for (int i = 0; i < 4; ++i) lost.emplace_back([&, i] { said[i] = nodes.LostWorkerReason(i); });
  for (std::thread& t : lost) t.join();
  for (const auto& reason : said) {
    ASSERT_TRUE(reason);
    EXPECT_EQ("preempted: TPU node node-4 is PREEMPTED (gcloud)", *reason);
  }
  EXPECT_EQ(1, nodes.asked());
  EXPECT_EQ(before + 1, Calls("describe", "node-4"));
  nodes.Forget();  // a new poll asks again
  EXPECT_TRUE(nodes.LostWorkerReason(0));
  EXPECT_EQ(2, nodes.asked());
}

TEST_F(PodRecoveryTest, APreemptedSliceIsRecreatedAloneAndTheOtherKeepsItsKeys) {
  Create("node-a", "v4-16");
  Create("node-b", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-a", "node-b"}, 2), "node-a,node-b");
  const std::string b_key = "10.9.0.3 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBBBB\n";
  std::ofstream(dir_ / "known_hosts") << "10.9.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAA\n"
                                      << b_key;
  Run({"--admin", "preempt", "node-a", "--zone", "zone-a"});
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  auto next = PrepareRestart(store, plan, {}, nodes, NoWait());
  ASSERT_TRUE(std::holds_alternative<AttemptReason>(next));
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, std::get<AttemptReason>(next));
  EXPECT_EQ(2, Calls("create", "node-a"));  // created, then recreated
  EXPECT_EQ(1, Calls("create", "node-b"));  // never touched
  EXPECT_EQ(0, Calls("delete", "node-b"));
  EXPECT_EQ(AttemptEnd::kPreemption, store.GetAttempt(plan.job.id, 1).ended_by);
  RecoveryRecords records(store);
  ASSERT_EQ(1u, records.Preemptions(plan.job.id).size());
  EXPECT_EQ("node-a", records.Preemptions(plan.job.id)[0].node);
  EXPECT_TRUE(records.Preemptions(plan.job.id)[0].back_ns);
  EXPECT_TRUE(records.Recreations(plan.job.id).empty());  // the intent is fulfilled
  // node-a's old key is forgotten; node-b's stays pinned.
  std::ifstream in(dir_ / "known_hosts");
  const std::string known((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::string::npos, known.find("AAAAIAAAA")) << known;
  EXPECT_NE(std::string::npos, known.find(b_key)) << known;
  // The pod's slice 1 still points at node-b's workers.
  EXPECT_EQ("10.9.0.3", plan.pod.workers[2].host.host);
}

TEST_F(PodRecoveryTest, ANodeDeletedBySomeoneElseEndsTheRunButPodrunsOwnDeleteIsFinished) {
  Create("node-1", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-1"}, 2), "node-1");
  Run({"compute", "tpus", "tpu-vm", "delete", "node-1", "--zone", "zone-a", "--quiet"});
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  auto next = PrepareRestart(store, plan, {}, nodes, NoWait());
  ASSERT_TRUE(std::holds_alternative<ExitCode>(next));
  EXPECT_EQ(ExitCode::kFailed, std::get<ExitCode>(next));
  EXPECT_EQ(1, Calls("create", "node-1"));  // not brought back
  // The same, but podrun recorded that it was recreating the node (a keeper killed between its
  // delete and its create): the next keeper creates it.
  RecoveryRecords(store).BeginRecreation(plan.job.id, {"tpu", "node-1", "zone-a", "", 0});
  EXPECT_TRUE(StartFailedOnAGoneSlice(store, plan, nodes, NoWait()));
  next = PrepareRestart(store, plan, {}, nodes, NoWait());
  ASSERT_TRUE(std::holds_alternative<AttemptReason>(next));
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, std::get<AttemptReason>(next));
  EXPECT_EQ(2, Calls("create", "node-1"));
  EXPECT_TRUE(RecoveryRecords(store).Recreations(plan.job.id).empty());
}

TEST_F(PodRecoveryTest, APreemptionUsesNoRestartAndStopsOnlyAtItsOwnBudget) {
  Create("node-1", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-1"}, 2), "node-1");
  plan.spec.restarts = 0;
  plan.spec.preemptions = 2;
  Run({"--admin", "preempt", "node-1", "--zone", "zone-a"});
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  // restarts: 0 and every restart used: a preemption is still recovered.
  auto next = PrepareRestart(store, plan, {.restarts = 0, .preemptions = 1}, nodes, NoWait());
  ASSERT_TRUE(std::holds_alternative<AttemptReason>(next));
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, std::get<AttemptReason>(next));
  EXPECT_EQ(2, Calls("create", "node-1"));
  // preemptions: 2 used up: not recreated, no restart.
  Run({"--admin", "preempt", "node-1", "--zone", "zone-a"});
  next = PrepareRestart(store, plan, {.restarts = 0, .preemptions = 2}, nodes, NoWait());
  EXPECT_TRUE(std::holds_alternative<NoRestart>(next));
  EXPECT_EQ(2, Calls("create", "node-1"));
  // A failure of the program on a READY node with restarts: 0: no restart, nothing asked twice.
  Run({"compute", "tpus", "tpu-vm", "delete", "node-1", "--zone", "zone-a", "--quiet"});
  Create("node-1", "v4-16");
  nodes.Forget();
  next = PrepareRestart(store, plan, {}, nodes, NoWait());
  EXPECT_TRUE(std::holds_alternative<NoRestart>(next));
  EXPECT_EQ(3, Calls("create", "node-1"));
}

TEST_F(PodRecoveryTest, AKeeperKilledWhileTheNewNodeIsCreatingIsFinishedWithoutASecondCreate) {
  Create("node-1", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-1"}, 2), "node-1");
  // What a keeper killed mid-recreation leaves: the intent and the preemption open, the old node
  // deleted and the new one CREATING (its gcloud create taken by the API).
  RecoveryRecords records(store);
  records.BeginRecreation(plan.job.id, {"tpu", "node-1", "zone-a", "", 0});
  records.AddPreemption(plan.job.id, {.id = 0,
                                      .attempt = plan.attempt,
                                      .node = "node-1",
                                      .state = "PREEMPTED",
                                      .seen_ns = NowUnixNs(),
                                      .back_ns = std::nullopt,
                                      .recreated = true});
  Run({"compute", "tpus", "tpu-vm", "delete", "node-1", "--zone", "zone-a", "--quiet"});
  Run({"compute", "tpus", "tpu-vm", "create", "node-1", "--zone", "zone-a", "--accelerator-type",
       "v4-16", "--version", "base", "--async"});
  ASSERT_EQ(2, Calls("create", "node-1"));
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  EXPECT_TRUE(StartFailedOnAGoneSlice(store, plan, nodes, NoWait()));
  auto next = PrepareRestart(store, plan, {}, nodes, [](std::chrono::milliseconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return true;
  });
  ASSERT_TRUE(std::holds_alternative<AttemptReason>(next));
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, std::get<AttemptReason>(next));
  EXPECT_EQ(2, Calls("create", "node-1"));  // the CREATING node was waited for, not made again
  EXPECT_EQ(1, Calls("delete", "node-1"));
  EXPECT_TRUE(records.Recreations(plan.job.id).empty());
  ASSERT_EQ(1u, records.Preemptions(plan.job.id).size());  // one preemption, however many keepers
  EXPECT_TRUE(records.Preemptions(plan.job.id)[0].back_ns);
}

TEST_F(PodRecoveryTest, TheApisBadMinuteDuringARecoveryIsWaitedOutAndNothingIsMadeTwice) {
  Create("node-1", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-1"}, 2), "node-1");
  Run({"--admin", "preempt", "node-1", "--zone", "zone-a"});
  // The API answers 503 to every command for the next 3 s.
  Run({"--admin", "outage", "3"});
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  int waits = 0;
  auto next = PrepareRestart(store, plan, {}, nodes, [&](std::chrono::milliseconds s) {
    ++waits;
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(s, std::chrono::seconds(1)));
    return true;
  });
  ASSERT_TRUE(std::holds_alternative<AttemptReason>(next));
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, std::get<AttemptReason>(next));
  EXPECT_GT(waits, 0);
  EXPECT_EQ(2, Calls("create", "node-1"));  // once at the start, once to recreate
  RecoveryRecords records(store);
  EXPECT_TRUE(records.Recreations(plan.job.id).empty());
  ASSERT_EQ(1u, records.Preemptions(plan.job.id).size());
}

TEST_F(PodRecoveryTest, APermanentRefusalDuringARecoveryEndsItAtOnceWithGcloudsWords) {
  Create("node-1", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-1"}, 2), "node-1");
  Run({"--admin", "preempt", "node-1", "--zone", "zone-a"});
  Run({"--admin", "outage", "600", "PERMISSION_DENIED"});
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  int waits = 0;
  auto next = PrepareRestart(store, plan, {}, nodes, [&](std::chrono::milliseconds) {
    ++waits;
    return true;
  });
  ASSERT_TRUE(std::holds_alternative<ExitCode>(next));
  EXPECT_EQ(ExitCode::kUnreachable, std::get<ExitCode>(next));
  EXPECT_EQ(0, waits);
  EXPECT_EQ(1, Calls("create", "node-1"));
  Run({"--admin", "outage", "0"});
}

TEST_F(PodRecoveryTest, TheSpecsCreateIsNotAppliedToAnotherNode) {
  Create("node-other", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  // The spec's create: is for node-mine; the job ran on node-other (--tpu on the command line).
  AttemptPlan plan = Plan(store, TpuPod({"node-other"}, 2), "node-mine");
  Run({"--admin", "preempt", "node-other", "--zone", "zone-a"});
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  EXPECT_FALSE(StartFailedOnAGoneSlice(store, plan, nodes, NoWait()));
  // Waited for (it never comes back here): the wait is given up at its first sleep.
  auto next =
      PrepareRestart(store, plan, {}, nodes, [](std::chrono::milliseconds) { return false; });
  ASSERT_TRUE(std::holds_alternative<ExitCode>(next));
  EXPECT_EQ(ExitCode::kInterrupted, std::get<ExitCode>(next));
  EXPECT_EQ(1, Calls("create", "node-other"));
  EXPECT_EQ(0, Calls("delete", "node-other"));
}

TEST_F(PodRecoveryTest, AWorkerLostWhileItsNodeReadsReadyIsWaitedForAtMostTheLimit) {
  Create("node-1", "v4-16");
  JobStore store(dir_ / "home" / "podrun.db");
  AttemptPlan plan = Plan(store, TpuPod({"node-1"}, 2), "node-1");
  store.UpdateWorker(plan.job.id, 1, 0, {.state = WorkerState::kLost});
  // Its address takes no connection (TEST-NET-1), the node reads READY for ever.
  plan.pod.workers[0].host.host = "192.0.2.1";
  ::setenv("PODRUN_LOST_READY_LIMIT_SECONDS", "2", 1);
  SourceStates nodes(plan.pod, dir_ / "cache", std::chrono::seconds(3));
  int waits = 0;
  const auto began = std::chrono::steady_clock::now();
  auto next = PrepareRestart(store, plan, {}, nodes, [&](std::chrono::milliseconds) {
    ++waits;
    return waits < 1000;  // never given up by the user: only the limit ends the wait
  });
  ::unsetenv("PODRUN_LOST_READY_LIMIT_SECONDS");
  ASSERT_TRUE(std::holds_alternative<AttemptReason>(next));
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(60));
  EXPECT_LT(waits, 1000);
  EXPECT_EQ(1, Calls("create", "node-1"));  // handled as lost: restarted, nothing recreated
}

TEST_F(PodRecoveryTest, AWorkerBehindAJumpHostIsNotProbedFromHere) {
  // A listener on loopback: reachable directly; through a jump host the probe would test another
  // path than SSH's, so it is not made.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(0, ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  ASSERT_EQ(0, ::listen(listener, 4));
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  const std::string config = (dir_ / "ssh_config").string();
  std::ofstream(config) << "Host aliased\n  HostName 127.0.0.1\n  Port " << port << "\n";
  SshOptions options;
  options.ssh_config = config;
  options.known_hosts = (dir_ / "known_hosts").string();
  const std::vector<HostSpec> hosts = {{std::nullopt, "aliased", std::nullopt},
                                       {std::nullopt, "127.0.0.1", port}};
  // Where ssh_config sends it: probed, at ssh_config's address and port.
  EXPECT_EQ((std::vector<ProbeResult>{ProbeResult::kReachable, ProbeResult::kReachable}),
            ProbeSshRoutes(hosts, options, std::chrono::seconds(3)));
  options.jump = JumpChain{{std::nullopt, "jump.example", std::nullopt}};
  EXPECT_EQ((std::vector<ProbeResult>{ProbeResult::kUnknown, ProbeResult::kUnknown}),
            ProbeSshRoutes(hosts, options, std::chrono::seconds(3)));
  ::close(listener);
}

TEST(RecoveriesSince, CountsBackToTheLastLaunchOrRerunEachBudgetApart) {
  auto attempts = [](std::vector<AttemptReason> reasons) {
    std::vector<AttemptRecord> out;
    for (AttemptReason r : reasons) {
      AttemptRecord a;
      a.reason = r;
      out.push_back(a);
    }
    return out;
  };
  using R = AttemptReason;
  EXPECT_EQ(0, RecoveriesSince(attempts({R::kLaunch})).restarts);
  // A preemption never uses up restarts:.
  const RecoveriesUsed mixed =
      RecoveriesSince(attempts({R::kLaunch, R::kRecoveryAfterPreemption, R::kRestartAfterFailure,
                                R::kRecoveryAfterPreemption, R::kRecoveryAfterPreemption}));
  EXPECT_EQ(1, mixed.restarts);
  EXPECT_EQ(3, mixed.preemptions);
  // A rerun starts the count again: `rerun -d` with restarts: 1 gets its own restart.
  EXPECT_EQ(0,
            RecoveriesSince(attempts({R::kLaunch, R::kRestartAfterFailure, R::kRerun})).restarts);
  EXPECT_EQ(1, RecoveriesSince(
                   attempts({R::kLaunch, R::kRestartAfterFailure, R::kRerun, R::kRestartAfterHang}))
                   .restarts);
}

TEST(SpecNeedsKeeper, ACreateToRecoverPreemptionsIsEnoughWithoutRestarts) {
  auto spec = [](const std::string& extra) {
    return ParseSpecText("pod:\n  tpu: n\n  zone: z\n" + extra + "run: x\n", "j.yaml");
  };
  EXPECT_FALSE(SpecNeedsKeeper(spec("")));
  EXPECT_TRUE(SpecNeedsKeeper(spec("restarts: 1\n")));
  const std::string create = "  create: {accelerator_type: v4-16, version: base, spot: true}\n";
  EXPECT_TRUE(SpecNeedsKeeper(spec(create)));
  EXPECT_FALSE(SpecNeedsKeeper(spec(create + "preemptions: 0\n")));
}

}  // namespace
}  // namespace podrun
