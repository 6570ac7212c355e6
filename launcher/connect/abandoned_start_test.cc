// Unit tests of what a start left in part means (abandoned_start.h) and of how its ends read
// (job_agents.h): only an unconfirmed end proves the start abandoned; the cause names who ran
// and who never started; the started workers read as failed with the reason.
#include "launcher/connect/abandoned_start.h"

#include <gtest/gtest.h>

#include "proto/process_end.h"

namespace podrun {
namespace {

AgentJobStatus Running() {
  AgentJobStatus s;
  s.state = AgentJobState::kRunning;
  return s;
}

AgentJobStatus Prepared() {
  AgentJobStatus s;
  s.state = AgentJobState::kPrepared;
  return s;
}

AgentJobStatus Unconfirmed() {
  AgentJobStatus s;
  s.state = AgentJobState::kStopped;
  ProcessEnd end;
  end.signal = 15;
  end.start_unconfirmed = true;
  end.end_time_ns = 7;
  s.end = end;
  return s;
}

TEST(AbandonedStart, OnlyAnUnconfirmedEndProvesIt) {
  // A gang between its Starts, seen by `logs` from another terminal: nothing is ended.
  EXPECT_FALSE(StartAbandoned({{0, Running()}, {1, Prepared()}, {2, std::nullopt}}));
  AgentJobStatus stopped = Running();
  stopped.state = AgentJobState::kStopped;
  stopped.end = ProcessEnd{};
  stopped.end->stopped_by_request = true;
  stopped.end->signal = 15;
  EXPECT_FALSE(StartAbandoned({{0, stopped}, {1, Prepared()}}));
  EXPECT_TRUE(StartAbandoned({{0, Unconfirmed()}, {1, Prepared()}, {2, Prepared()}}));
}

TEST(AbandonedStart, TheCauseNamesWhoRanAndWhoNeverStarted) {
  AgentJobStatus never = Prepared();
  never.state = AgentJobState::kStopped;
  never.end = ProcessEnd{};
  never.end->never_started = true;
  EXPECT_EQ(AbandonedStartCause({{0, Unconfirmed()}, {1, never}, {2, Prepared()}, {3, never}}),
            std::string(kStartUnconfirmedReason) + " (started: w0; never started: w1-3)");
}

TEST(AbandonedStart, AStartedWorkerReadsFailedWithTheReason) {
  const ProcessEnd end = *Unconfirmed().end;
  EXPECT_EQ(WorkerState::kFailed, StateOfEnd(end));
  EXPECT_EQ(std::string(kStartUnconfirmedReason) +
                ", so its agent stopped it (killed by signal 15 (SIGTERM))",
            DescribeProcessEnd(end));
  // As the agent's Status gives it (STOPPED): still failed, never "stopped by request".
  const std::optional<WorkerUpdate> update = UpdateFromAgentStatus(Unconfirmed());
  ASSERT_TRUE(update.has_value());
  EXPECT_EQ(WorkerState::kFailed, update->state);
  ASSERT_TRUE(update->error.has_value());
  EXPECT_NE(std::string::npos, update->error->find(kStartUnconfirmedReason));
  // A job that caught SIGTERM and exited 0 still failed: the gang never ran whole.
  ProcessEnd clean = end;
  clean.signal.reset();
  clean.exit_code = 0;
  EXPECT_EQ(WorkerState::kFailed, StateOfEnd(clean));
}

}  // namespace
}  // namespace podrun
