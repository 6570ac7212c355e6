#include "launcher/commands/outcome.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

WorkerOutcome Exited(int worker, int code) {
  WorkerOutcome o;
  o.worker = worker;
  o.status.exit_code = code;
  return o;
}

TEST(Outcome, AllZeroIsSuccess) {
  EXPECT_EQ(ExitCode::kOk, AggregateExitCode({Exited(0, 0), Exited(1, 0)}));
  EXPECT_EQ("", SummarizeFailures({Exited(0, 0)}));
}

TEST(Outcome, NonZeroSignalOrLostIsFailure) {
  EXPECT_EQ(ExitCode::kFailed, AggregateExitCode({Exited(0, 0), Exited(1, 2)}));
  WorkerOutcome killed;
  killed.status.signal = "KILL";
  EXPECT_EQ(ExitCode::kFailed, AggregateExitCode({Exited(0, 0), killed}));
  WorkerOutcome lost = Exited(2, 0);
  lost.lost = true;
  EXPECT_EQ(ExitCode::kFailed, AggregateExitCode({lost}));
  WorkerOutcome none;  // no status at all
  EXPECT_EQ(ExitCode::kFailed, AggregateExitCode({none}));
}

TEST(Outcome, UnreachableWins) {
  WorkerOutcome down;
  down.worker = 5;
  down.unreachable = true;
  EXPECT_EQ(ExitCode::kUnreachable, AggregateExitCode({Exited(0, 1), down, Exited(2, 0)}));
  EXPECT_EQ("2 of 3 workers failed: w0 (exit code 1), w5 (unreachable)",
            SummarizeFailures({Exited(0, 1), down, Exited(2, 0)}));
}

}  // namespace
}  // namespace podrun
