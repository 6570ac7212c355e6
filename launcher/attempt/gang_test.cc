#include "launcher/attempt/gang.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/gang_driver.h"
#include "launcher/attempt/stopper_threads.h"
#include "launcher/connect/agent_connection.h"
#include "launcher/store/job_store.h"

namespace podrun {
namespace {

TEST(Gang, BarrierOpensOnlyWhenEveryWorkerIsPrepared) {
  Gang g({0, 1, 2}, OnFailure::kStopAll);
  EXPECT_FALSE(g.ReadyForGo());
  g.Prepared(0);
  g.Prepared(2);
  EXPECT_FALSE(g.ReadyForGo());
  EXPECT_THROW(g.Go(), std::logic_error);
  g.Prepared(1);
  EXPECT_TRUE(g.ReadyForGo());
  g.Go();
  EXPECT_EQ(GangPhase::kRunning, g.phase());
}

TEST(Gang, FailureBeforeGoStartsNothingAnywhere) {
  Gang g({0, 1, 2, 3}, OnFailure::kStopAll);
  g.Prepared(0);
  g.Prepared(1);
  g.PrepareFailed(2, "unreachable");
  g.Prepared(3);
  EXPECT_FALSE(g.ReadyForGo());
  EXPECT_THROW(g.Go(), std::logic_error);
  EXPECT_EQ(GangPhase::kAborted, g.phase());
  EXPECT_TRUE(g.Running().empty());
  EXPECT_EQ(ExitCode::kUnreachable, g.Outcome());
  ASSERT_TRUE(g.root_cause());
  EXPECT_EQ(2, g.root_cause()->worker);
}

Gang Running(const std::vector<int>& workers, OnFailure policy) {
  Gang g(workers, policy);
  for (int w : workers) g.Prepared(w);
  g.Go();
  for (int w : workers) g.Started(w);
  return g;
}

TEST(Gang, FirstFailureStopsTheOthersAndIsTheRootCause) {
  Gang g = Running({0, 1, 2, 3}, OnFailure::kStopAll);
  EXPECT_TRUE(g.Ended(2, true, "exit code 3", false));
  EXPECT_EQ(GangPhase::kStopping, g.phase());
  EXPECT_EQ((std::vector<int>{0, 1, 3}), g.Running());
  // The others end because podrun stopped them: they are not failures of their own.
  EXPECT_FALSE(g.Ended(0, true, "signal 15", true));
  EXPECT_FALSE(g.Ended(1, true, "signal 15", false));
  EXPECT_FALSE(g.Lost(3, "connection reset"));
  EXPECT_EQ(GangPhase::kDone, g.phase());
  EXPECT_EQ(2, g.root_cause()->worker);
  EXPECT_EQ("exit code 3", g.root_cause()->reason);
  EXPECT_EQ(WorkerState::kFailed, g.state(2));
  EXPECT_EQ(WorkerState::kStopped, g.state(0));
  EXPECT_EQ(ExitCode::kFailed, g.Outcome());
}

TEST(Gang, LostAgentIsAFailure) {
  Gang g = Running({0, 1}, OnFailure::kStopAll);
  EXPECT_TRUE(g.Lost(1, "no keepalive for 30 s"));
  EXPECT_EQ("lost: no keepalive for 30 s", g.root_cause()->reason);
  EXPECT_EQ(WorkerState::kLost, g.state(1));
}

TEST(Gang, ContinuePolicyLetsTheOthersRun) {
  Gang g = Running({0, 1, 2}, OnFailure::kContinue);
  EXPECT_FALSE(g.Ended(1, true, "exit code 1", false));
  EXPECT_EQ(GangPhase::kRunning, g.phase());
  EXPECT_FALSE(g.Ended(0, false, "", false));
  EXPECT_FALSE(g.Ended(2, false, "", false));
  EXPECT_EQ(GangPhase::kDone, g.phase());
  EXPECT_EQ(ExitCode::kFailed, g.Outcome());
}

TEST(Gang, AllSucceed) {
  Gang g = Running({0, 1}, OnFailure::kStopAll);
  EXPECT_FALSE(g.Ended(0, false, "", false));
  EXPECT_FALSE(g.Ended(1, false, "", false));
  EXPECT_EQ(GangPhase::kDone, g.phase());
  EXPECT_EQ(ExitCode::kOk, g.Outcome());
}

// A Ctrl-C between GO and the Start answers finds nobody running yet: each worker that then
// answers is stopped with the gang (it used to run on until it ended by itself).
TEST(Gang, AWorkerWhoseStartIsAnsweredAfterACtrlCIsStoppedToo) {
  Gang g({0, 1}, OnFailure::kStopAll);
  g.Prepared(0);
  g.Prepared(1);
  g.Go();
  EXPECT_FALSE(g.Interrupt());  // nobody to stop yet
  EXPECT_TRUE(g.Started(0));
  EXPECT_TRUE(g.Started(1));
  g.Ended(0, true, "signal 15", true);
  g.Ended(1, true, "signal 15", true);
  EXPECT_EQ(GangPhase::kDone, g.phase());
  EXPECT_EQ(ExitCode::kInterrupted, g.Outcome());
  EXPECT_FALSE(Running({0}, OnFailure::kStopAll).Started(0));  // a running gang: nothing to do
}

TEST(Gang, InterruptStopsEveryoneOnce) {
  Gang g = Running({0, 1}, OnFailure::kStopAll);
  EXPECT_TRUE(g.Interrupt());
  EXPECT_FALSE(g.Interrupt());
  g.Ended(0, true, "signal 15", true);
  g.Ended(1, true, "signal 15", true);
  EXPECT_EQ(GangPhase::kDone, g.phase());
  EXPECT_EQ(ExitCode::kInterrupted, g.Outcome());
}

}  // namespace
}  // namespace podrun

// The driver's stoppers (StopperThreads): joined on every path.
namespace podrun {
namespace {

TEST(StopperThreads, AnExceptionAfterAStopStartedStillJoinsIt) {
  std::atomic<bool> stopped{false};
  try {
    StopperThreads stoppers;
    ASSERT_TRUE(stoppers.Start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      stopped = true;
    }));
    throw std::runtime_error("the attempt failed between the stop and its join");
  } catch (const std::runtime_error&) {
    // Reached (a joinable std::thread would have called std::terminate), and after the join.
    EXPECT_TRUE(stopped.load());
  }
}

TEST(StopperThreads, JoinAllWaitsForStopsStartedWhileItWaits) {
  StopperThreads stoppers;
  std::atomic<int> ended{0};
  ASSERT_TRUE(stoppers.Start([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stoppers.Start([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      ++ended;
    });
    ++ended;
  }));
  stoppers.JoinAll();
  EXPECT_EQ(2, ended.load());
}

TEST(StopperThreads, AStopThatThrowsIsSaidNotFatal) {
  StopperThreads stoppers;
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(stoppers.Start([] { throw std::runtime_error("w2: agent gone"); }));
  stoppers.JoinAll();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string::npos, err.find("stop: w2: agent gone")) << err;
}

}  // namespace
}  // namespace podrun

// The driver's lock guards the gang alone: a job-store write never holds up a Ctrl-C.
namespace podrun {
namespace {

// True when thread `tid` of this process sleeps in nanosleep or clock_nanosleep: SQLite's busy
// handler, waiting for another connection's lock.
bool SleepsInSqliteBusyWait(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long number = -1;
  if (!(in >> number)) return false;
  return number == SYS_nanosleep || number == SYS_clock_nanosleep;
}

TEST(GangDriver, ACtrlCIsTakenAtOnceWhileTheJobStoreIsLocked) {
  ::setenv("PODRUN_AGENT", PODRUN_AGENT_BINARY, 1);
  const auto home =
      std::filesystem::temp_directory_path() / ("gang_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(home);
  JobStore store(home / "podrun.db");
  JobRecord job;
  job.name = "locked";
  job.pod = "local:2";
  job.spec_text = "run: 'true'\n";
  job.hosts = {{0, "", "127.0.0.1", 0, "127.0.0.1"}, {1, "", "127.0.0.1", 0, "127.0.0.1"}};
  job = store.CreateJob(job);
  store.AddAttempt(job.id, {0, 1}, AttemptReason::kLaunch);
  AttemptPlan plan;
  plan.job = job;
  plan.pod.local = 2;
  plan.pod.workers.resize(2);
  plan.pod.workers[1].index = 1;
  plan.pod.selected = {0, 1};
  plan.pod.description = "local:2";
  plan.home = home;
  AttemptRecorder recorder(store, plan);
  AgentConnections connections(plan.pod, home / "local", plan.pod.selected, false);
  AttemptWorkers workers(connections);
  workers.at(1).error = "w1 (local): prepare: refused";
  GangDriver gang(plan, recorder, workers);

  // Another podrun holds the store: the barrier's record of w1's failure waits for it.
  sqlite3* other = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_open((home / "podrun.db").c_str(), &other));
  ASSERT_EQ(SQLITE_OK, sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr));
  std::optional<ExitCode> not_started;
  std::atomic<pid_t> barrier_tid{0};
  std::thread barrier([&] {
    barrier_tid = static_cast<pid_t>(::syscall(SYS_gettid));
    EXPECT_FALSE(gang.Barrier([&](ExitCode outcome, bool) { not_started = outcome; }));
  });
  // The interrupt comes once the barrier's record of w1's failure waits for the store's lock.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  bool waits_for_store = false;
  while (!waits_for_store && std::chrono::steady_clock::now() < deadline) {
    waits_for_store = barrier_tid != 0 && SleepsInSqliteBusyWait(barrier_tid);
    if (!waits_for_store) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(waits_for_store) << "the barrier's store write never waited for the lock";
  const auto began = std::chrono::steady_clock::now();
  gang.OnInterrupt();  // the interrupt watcher's thread, while the barrier writes
  const bool has_cause = gang.HasRootCause();
  const auto took = std::chrono::steady_clock::now() - began;
  sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  barrier.join();

  EXPECT_LT(took, std::chrono::milliseconds(500));
  EXPECT_TRUE(has_cause);
  ASSERT_TRUE(not_started.has_value());
  EXPECT_EQ(ExitCode::kUnreachable, *not_started);
  // The write was made once the store was free.
  EXPECT_EQ(WorkerState::kFailed, store.Workers(job.id, 1).at(1).state);
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace podrun
