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
    store.AddAttempt(job.id, {0});
    EXPECT_EQ("failure", ResumedFrom(store, job.id));
    store.SetAttemptCause(job.id, 1, "hung: no output from any worker for 5 s");
    EXPECT_EQ("hang", ResumedFrom(store, job.id));
    store.AddAttempt(job.id, {0});
    store.AddPreemption(job.id, {.id = 0,
                                 .attempt = 2,
                                 .node = "n",
                                 .state = "PREEMPTED",
                                 .seen_ns = 1,
                                 .back_ns = std::nullopt,
                                 .recreated = false});
    EXPECT_EQ("preemption", ResumedFrom(store, job.id));
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podrun
