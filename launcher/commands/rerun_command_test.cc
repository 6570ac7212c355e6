// Tests of which workers `rerun --failed` picks from the latest attempt's records.
#include "launcher/commands/rerun_command.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace podrun
