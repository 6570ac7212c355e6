// Tests of a start's confirmation on a worker, with real supervisors: a job started with a
// confirmation window and never confirmed is stopped by its supervisor and says why in its
// files; a confirmed one runs to its own end, also when the agent that started it was replaced
// before the confirmation came; a confirmation too late is refused, one after the job's own end
// is taken.
#include "worker/job/start_confirm.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <memory>

#include "proto/log_record.h"
#include "proto/process_end.h"
#include "worker/base/agent_error.h"
#include "worker/job/job_runner.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

class StartConfirmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "startconfirm.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    home_ = tmpl;
    runner_ = std::make_unique<JobRunner>(home_ / "agent", PODRUN_AGENT_BINARY);
  }
  void TearDown() override {
    if (runner_) runner_->StopAll();
    runner_.reset();
    std::filesystem::remove_all(home_);
  }

  // Prepares `id` (grace 1 s) and starts it with a confirmation window of `window`.
  void Start(const std::string& id, const std::string& run, std::chrono::milliseconds window) {
    JobRequest spec;
    spec.job_id = id;
    spec.workdir = (home_ / "work").string();
    spec.run = run;
    spec.grace_period = 1s;
    runner_->Prepare(spec);
    runner_->Start(id, 1, 0, window);
  }

  // Waits (woken by the job's files) until the job has ended; its state then.
  JobSnapshot WaitForEnd(const std::string& id) {
    const JobDir dir(home_ / "agent", id, 1);
    JobDirWatch watch(dir);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    JobSnapshot snap = ReadJobSnapshot(dir);
    while (!snap.exit && std::chrono::steady_clock::now() < deadline) {
      watch.Wait(std::min(deadline, std::chrono::steady_clock::now() + 200ms));
      snap = ReadJobSnapshot(dir);
    }
    return snap;
  }

  std::string Log(const std::string& id, LogStream stream) {
    LogReader reader(JobDir(home_ / "agent", id, 1).log_path());
    std::string out;
    for (auto batch = reader.ReadSome(); !batch.empty(); batch = reader.ReadSome()) {
      for (auto& r : batch) {
        if (r.stream == stream) out += r.data;
      }
    }
    return out;
  }

  std::filesystem::path home_;
  std::unique_ptr<JobRunner> runner_;
};

TEST_F(StartConfirmTest, AnUnconfirmedStartIsStoppedByItsSupervisorWhichSaysWhy) {
  Start("lonely", "echo started; exec sleep 600", 2000ms);
  const JobSnapshot snap = WaitForEnd("lonely");
  ASSERT_TRUE(snap.exit.has_value());
  EXPECT_TRUE(snap.exit->start_unconfirmed);
  EXPECT_FALSE(snap.exit->stopped_by_request);
  EXPECT_EQ(snap.exit->signal.value_or(0), SIGTERM);
  EXPECT_EQ(snap.state, JobState::kStopped);
  EXPECT_EQ(Log("lonely", LogStream::kStdout), "started\n");
  EXPECT_NE(Log("lonely", LogStream::kStderr).find(kStartUnconfirmedReason), std::string::npos)
      << Log("lonely", LogStream::kStderr);
  // The outcome is in the job's files, for any later agent.
  const auto recorded = JobDir(home_ / "agent", "lonely", 1).ReadProcessEnd();
  ASSERT_TRUE(recorded.has_value());
  EXPECT_TRUE(recorded->start_unconfirmed);
  // A confirmation that comes now is refused, naming why.
  try {
    runner_->Confirm("lonely", 1);
    ADD_FAILURE() << "a confirmation after the window was taken";
  } catch (const AgentError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFailedPrecondition);
    EXPECT_NE(std::string(e.what()).find("too late"), std::string::npos) << e.what();
  }
}

TEST_F(StartConfirmTest, AConfirmedStartRunsToItsOwnEnd) {
  // It outlives its window many times over: stopped for want of a confirmation, it would end
  // by SIGTERM, not with its own exit code.
  Start("gang", "sleep 3; echo done; exit 7", 1500ms);
  EXPECT_FALSE(runner_->Confirm("gang", 1));
  const JobSnapshot snap = WaitForEnd("gang");
  ASSERT_TRUE(snap.exit.has_value());
  EXPECT_EQ(snap.exit->exit_code.value_or(-1), 7);
  EXPECT_FALSE(snap.exit->start_unconfirmed);
  EXPECT_EQ(Log("gang", LogStream::kStdout), "done\n");
}

TEST_F(StartConfirmTest, TheWindowHoldsAcrossANewAgent) {
  Start("kept", "sleep 6; exit 0", 4000ms);
  Start("dropped", "exec sleep 600", 4000ms);
  runner_.reset();  // the agent is replaced: its jobs go on under their supervisors
  runner_ = std::make_unique<JobRunner>(home_ / "agent", PODRUN_AGENT_BINARY);
  EXPECT_FALSE(runner_->Confirm("kept", 1));  // the new agent confirms what the old one started
  const JobSnapshot kept = WaitForEnd("kept");
  ASSERT_TRUE(kept.exit.has_value());
  EXPECT_EQ(kept.exit->exit_code.value_or(-1), 0);
  EXPECT_FALSE(kept.exit->start_unconfirmed);
  // The one never confirmed is stopped all the same, by its supervisor.
  const JobSnapshot dropped = WaitForEnd("dropped");
  ASSERT_TRUE(dropped.exit.has_value());
  EXPECT_TRUE(dropped.exit->start_unconfirmed);
}

TEST_F(StartConfirmTest, AJobThatEndedBeforeItsConfirmationIsConfirmedAsEnded) {
  Start("quick", "exit 0", 60'000ms);
  const JobSnapshot snap = WaitForEnd("quick");
  ASSERT_TRUE(snap.exit.has_value());
  EXPECT_TRUE(runner_->Confirm("quick", 1));
  EXPECT_FALSE(snap.exit->start_unconfirmed);
}

TEST_F(StartConfirmTest, WithoutAWindowNothingIsEverStopped) {
  Start("plain", "sleep 1; exit 0", 0ms);
  const JobSnapshot snap = WaitForEnd("plain");
  ASSERT_TRUE(snap.exit.has_value());
  EXPECT_EQ(snap.exit->exit_code.value_or(-1), 0);
  EXPECT_FALSE(snap.exit->start_unconfirmed);
}

TEST_F(StartConfirmTest, APreparedJobCannotBeConfirmed) {
  JobRequest spec;
  spec.job_id = "waiting";
  spec.workdir = (home_ / "work").string();
  spec.run = "true";
  runner_->Prepare(spec);
  EXPECT_THROW(runner_->Confirm("waiting", 1), AgentError);
}

}  // namespace
}  // namespace podrun::agent
