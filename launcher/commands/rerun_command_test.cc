// Tests of which workers `rerun --failed` picks from the latest attempt's records.
#include "launcher/commands/rerun_command.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace podrun {
namespace {

WorkerRecord Worker(int index, WorkerState state, bool started) {
  WorkerRecord w;
  w.index = index;
  w.state = state;
  if (started) w.start_ns = 1;
  return w;
}

TEST(RerunTest, FailedLostAndNeverStartedWorkersAreRerun) {
  const std::vector<WorkerRecord> workers = {
      Worker(0, WorkerState::kExited, true),      // succeeded
      Worker(1, WorkerState::kFailed, true),      // its process failed
      Worker(2, WorkerState::kStopped, true),     // stopped by podrun because of w1: not rerun
      Worker(3, WorkerState::kLost, true),        // lost
      Worker(4, WorkerState::kFailed, false),     // could not be prepared
      Worker(5, WorkerState::kStopped, false),    // stopped before it started: never started
      Worker(6, WorkerState::kConnecting, false)  // the launcher died before its start
  };
  EXPECT_EQ(FailedWorkers(workers), (std::vector<int>{1, 3, 4, 5, 6}));
  EXPECT_TRUE(FailedWorkers({Worker(0, WorkerState::kExited, true)}).empty());
}

TEST(RerunTest, ARerunSaysWhatEndedTheAttemptBeforeIt) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("podrun-rerun-resumed-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    JobStore store(dir / "podrun.db");
    JobRecord job;
    job.name = "j";
    job.pod = "hosts:1";
    job.spec_text = "run: x\n";
    job.spec_path = "j.yaml";
    job.hosts = {{0, "u", "h", 22, "h"}};
    job = store.CreateJob(job);
    store.AddAttempt(job.id, {0}, AttemptReason::kLaunch);
    EXPECT_EQ("", store.GetAttempt(job.id, 1).resumed_from);
    // A rerun after an attempt that said nothing of its end: "failure".
    store.AddAttempt(job.id, {0}, AttemptReason::kRerun);
    EXPECT_EQ("failure", store.GetAttempt(job.id, 2).resumed_from);
    // The message says "hung" but the typed end says failure: the fact is the field.
    store.SetAttemptEnd(job.id, 2, AttemptEnd::kFailure, "hung: a message that is only text");
    store.AddAttempt(job.id, {0}, AttemptReason::kRerun);
    EXPECT_EQ("failure", store.GetAttempt(job.id, 3).resumed_from);
    store.SetAttemptEnd(job.id, 3, AttemptEnd::kHang, "no output from any worker for 5 s");
    store.AddAttempt(job.id, {0}, AttemptReason::kRerun);
    EXPECT_EQ("hang", store.GetAttempt(job.id, 4).resumed_from);
    EXPECT_EQ(AttemptReason::kRerun, store.GetAttempt(job.id, 4).reason);
    store.SetAttemptEnd(job.id, 4, AttemptEnd::kPreemption);
    store.AddAttempt(job.id, {0}, AttemptReason::kRecoveryAfterPreemption);
    EXPECT_EQ("preemption", store.GetAttempt(job.id, 5).resumed_from);
    EXPECT_TRUE(IsAutomatic(store.GetAttempt(job.id, 5).reason));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podrun
