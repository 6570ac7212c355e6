// Unit tests of what the agents' answers mean for the job store (job_agents.h).
#include "launcher/connect/job_agents.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace podrun {
namespace {

ProcessEnd Exited(int code) {
  ProcessEnd end;
  end.exit_code = code;
  end.end_time_ns = 42;
  return end;
}

TEST(JobAgents, ProcessEndsMapToWorkerStates) {
  EXPECT_EQ(WorkerState::kExited, StateOfEnd(Exited(0)));
  EXPECT_EQ(WorkerState::kFailed, StateOfEnd(Exited(3)));
  ProcessEnd killed;
  killed.signal = 9;
  EXPECT_EQ(WorkerState::kFailed, StateOfEnd(killed));
  killed.stopped_by_request = true;
  EXPECT_EQ(WorkerState::kStopped, StateOfEnd(killed));
  ProcessEnd never;
  never.never_started = true;
  EXPECT_EQ(WorkerState::kStopped, StateOfEnd(never));

  EXPECT_EQ("exit code 3", DescribeProcessEnd(Exited(3)));
  EXPECT_EQ("stopped (killed by signal 9 (SIGKILL))", DescribeProcessEnd(killed));
  EXPECT_EQ("never started", DescribeProcessEnd(never));
}

TEST(JobAgents, AgentStatusUpdatesOnlyWhatItSettles) {
  EXPECT_FALSE(UpdateFromAgentStatus(std::nullopt));
  AgentJobStatus status;
  status.state = AgentJobState::kPrepared;
  EXPECT_FALSE(UpdateFromAgentStatus(status));

  status.state = AgentJobState::kRunning;
  status.start_time_ns = 7;
  std::optional<WorkerUpdate> running = UpdateFromAgentStatus(status);
  ASSERT_TRUE(running);
  EXPECT_EQ(WorkerState::kRunning, running->state);
  EXPECT_EQ(7, running->start_ns);
  EXPECT_FALSE(running->exit_code);

  status.state = AgentJobState::kExited;
  status.end = Exited(2);
  std::optional<WorkerUpdate> exited = UpdateFromAgentStatus(status);
  ASSERT_TRUE(exited);
  EXPECT_EQ(WorkerState::kFailed, exited->state);
  EXPECT_EQ(2, exited->exit_code);
  EXPECT_EQ(42, exited->end_ns);

  status.state = AgentJobState::kStopped;
  EXPECT_EQ(WorkerState::kStopped, UpdateFromAgentStatus(status)->state);
}

TEST(JobAgents, AnAttemptSettlesOnceEveryWorkerIsFinal) {
  auto workers = [](std::initializer_list<WorkerState> states) {
    std::vector<WorkerRecord> out;
    for (WorkerState s : states) {
      WorkerRecord w;
      w.index = static_cast<int>(out.size());
      w.state = s;
      out.push_back(w);
    }
    return out;
  };
  using S = WorkerState;
  EXPECT_EQ(AttemptState::kSucceeded, SettledAttemptState(workers({S::kExited, S::kExited})));
  EXPECT_EQ(AttemptState::kFailed, SettledAttemptState(workers({S::kStopped, S::kFailed})));
  EXPECT_EQ(AttemptState::kStopped, SettledAttemptState(workers({S::kExited, S::kStopped})));
  EXPECT_FALSE(SettledAttemptState(workers({S::kExited, S::kRunning})));
  EXPECT_FALSE(SettledAttemptState(workers({S::kExited, S::kLost})));  // it may still run
}

TEST(JobAgents, SettleAttemptIfDoneRecordsTheOutcome) {
  std::filesystem::path dir = ::testing::TempDir() + "/job-agents-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  JobStore store(dir / "podrun.db");
  JobRecord job;
  job.name = "t";
  job.pod = "local:2";
  for (int i = 0; i < 2; ++i) {
    JobHost host;
    host.index = i;
    host.host = "localhost";
    job.hosts.push_back(host);
  }
  job = store.CreateJob(job);
  int attempt = store.AddAttempt(job.id, {0, 1}, AttemptReason::kLaunch);
  store.SetAttemptState(job.id, attempt, AttemptState::kRunning);
  store.UpdateWorker(job.id, attempt, 0, UpdateFromProcessEnd(Exited(0)));
  EXPECT_FALSE(SettleAttemptIfDone(store, job.id, attempt));
  ProcessEnd later = Exited(1);
  later.end_time_ns = 99;
  store.UpdateWorker(job.id, attempt, 1, UpdateFromProcessEnd(later));
  EXPECT_TRUE(SettleAttemptIfDone(store, job.id, attempt));
  AttemptRecord record = store.GetAttempt(job.id, attempt);
  EXPECT_EQ(AttemptState::kFailed, record.state);
  EXPECT_EQ(1, record.exit_code);
  EXPECT_EQ(99, record.ended_ns);
  EXPECT_FALSE(SettleAttemptIfDone(store, job.id, attempt));  // already settled
}

}  // namespace
}  // namespace podrun
