#include "launcher/insight/run_timeline.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

constexpr int64_t S(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

WorkerTimeline Worker(int index, std::vector<PhaseSegment> phases, std::optional<double> first,
                      std::optional<double> last) {
  WorkerTimeline w;
  w.worker = index;
  w.phases = std::move(phases);
  if (first) w.first_step_ns = S(*first);
  if (last) w.last_step_ns = S(*last);
  return w;
}

AttemptTimeline Attempt(int number, double start, std::optional<double> end, AttemptState state,
                        AttemptEnd ended_by, std::vector<WorkerTimeline> workers) {
  AttemptTimeline a;
  a.number = number;
  a.started_ns = S(start);
  if (end) a.ended_ns = S(*end);
  a.state = state;
  a.ended_by = ended_by;
  a.workers = std::move(workers);
  return a;
}

// Two attempts, a preemption between them (see the numbers worked out by hand below).
RunTimeline PreemptedRun() {
  RunTimeline run;
  run.now_ns = S(1000);
  run.attempts.push_back(Attempt(1, 0, 100, AttemptState::kFailed, AttemptEnd::kPreemption,
                                 {Worker(0,
                                         {{"agents", S(0), S(2), false},
                                          {"sync", S(2), S(3), false},
                                          {"setup", S(3), S(7), false},
                                          {"start", S(7), S(8), false}},
                                         10, 80),
                                  Worker(1,
                                         {{"agents", S(0), S(3), false},
                                          {"sync", S(3), S(3.5), false},
                                          {"setup", S(3.5), S(6), false},
                                          {"start", S(7), S(8.2), false}},
                                         11, 82)}));
  run.attempts.push_back(Attempt(2, 150, 400, AttemptState::kSucceeded, AttemptEnd::kNone,
                                 {Worker(0, {}, 170, 390), Worker(1, {}, 172, 395)}));
  run.recoveries.push_back({1, "node-1", "PREEMPTED", S(95), S(150), true});
  return run;
}

TEST(RunTimelineTest, PreemptionBetweenTwoAttempts) {
  const RunAccount a = AccountRun(PreemptedRun());
  // Wall 0 → 400; steps 10 → 82 (72) and 170 → 395 (225).
  EXPECT_EQ(S(400), a.wall_ns);
  EXPECT_EQ(S(297), a.steps_ns);
  EXPECT_TRUE(a.stepped);
  EXPECT_DOUBLE_EQ(297.0 / 400.0, a.goodput);
  ASSERT_EQ(2u, a.steps.size());
  EXPECT_EQ(S(10), a.steps[0]->first_ns);
  EXPECT_EQ(S(82), a.steps[0]->last_ns);
  // Lost to the preemption: attempt 1's last step (82) to attempt 2's first (170).
  ASSERT_EQ(1u, a.lost.size());
  EXPECT_EQ(1, a.lost[0].attempt);
  EXPECT_EQ(LostCause::kPreemption, a.lost[0].cause);
  EXPECT_EQ(S(88), a.lost_ns[static_cast<size_t>(LostCause::kPreemption)]);
  EXPECT_EQ(0, a.lost_ns[static_cast<size_t>(LostCause::kHang)]);
  EXPECT_EQ(0, a.lost_ns[static_cast<size_t>(LostCause::kFailure)]);
  EXPECT_EQ(0, a.lost_ns[static_cast<size_t>(LostCause::kStop)]);
  // Startup 0 → 10: agents to 3, sync to 3.5, setup to 7, start to 8.2, first step to 10.
  EXPECT_EQ(S(10), a.startup_ns);
  std::vector<std::pair<std::string, int64_t>> parts;
  for (const StartupPart& p : a.startup) parts.emplace_back(p.part, p.ns);
  EXPECT_EQ((std::vector<std::pair<std::string, int64_t>>{{"launch", 0},
                                                          {"agents", S(3)},
                                                          {"sync", S(0.5)},
                                                          {"setup", S(3.5)},
                                                          {"start", S(8.2) - S(7)},
                                                          {"first step", S(10) - S(8.2)}}),
            parts);
  // Left: 395 → 400.
  EXPECT_EQ(S(5), a.other_ns);
}

TEST(RunTimelineTest, HangThenAnAttemptWithoutStepsThenAStop) {
  RunTimeline run;
  run.now_ns = S(1000);
  run.attempts.push_back(
      Attempt(1, 0, 50, AttemptState::kFailed, AttemptEnd::kHang, {Worker(0, {}, 5, 30)}));
  // Could not start, without saying why: a failure. It never stepped.
  run.attempts.push_back(Attempt(2, 60, 90, AttemptState::kStartFailed, AttemptEnd::kNone,
                                 {Worker(0, {}, std::nullopt, std::nullopt)}));
  run.attempts.push_back(
      Attempt(3, 100, 200, AttemptState::kStopped, AttemptEnd::kNone, {Worker(0, {}, 110, 180)}));
  const RunAccount a = AccountRun(run);
  EXPECT_EQ(S(200), a.wall_ns);
  EXPECT_EQ(S(25 + 70), a.steps_ns);
  EXPECT_DOUBLE_EQ(95.0 / 200.0, a.goodput);
  EXPECT_FALSE(a.steps[1].has_value());
  // Hang: 30 → attempt 2's end (90, it never stepped). Failure: from attempt 2's start (60),
  // clipped to 90, to attempt 3's first step (110). Stop: 180 → the run's end (200).
  ASSERT_EQ(3u, a.lost.size());
  EXPECT_EQ(S(30), a.lost[0].from_ns);
  EXPECT_EQ(S(90), a.lost[0].to_ns);
  EXPECT_EQ(S(90), a.lost[1].from_ns);
  EXPECT_EQ(S(110), a.lost[1].to_ns);
  EXPECT_EQ(S(60), a.lost_ns[static_cast<size_t>(LostCause::kHang)]);
  EXPECT_EQ(S(20), a.lost_ns[static_cast<size_t>(LostCause::kFailure)]);
  EXPECT_EQ(S(20), a.lost_ns[static_cast<size_t>(LostCause::kStop)]);
  EXPECT_EQ(0, a.lost_ns[static_cast<size_t>(LostCause::kPreemption)]);
  // No phases recorded: the whole startup waits for the first step.
  EXPECT_EQ(S(5), a.startup_ns);
  ASSERT_EQ(2u, a.startup.size());
  EXPECT_EQ("first step", a.startup[1].part);
  EXPECT_EQ(S(5), a.startup[1].ns);
  EXPECT_EQ(0, a.other_ns);
}

TEST(RunTimelineTest, NoStepsAtAll) {
  RunTimeline run;
  run.now_ns = S(1000);
  run.attempts.push_back(Attempt(1, 0, 10, AttemptState::kSucceeded, AttemptEnd::kNone,
                                 {Worker(0, {{"agents", S(0), S(1), false}}, {}, {})}));
  const RunAccount a = AccountRun(run);
  EXPECT_FALSE(a.stepped);
  EXPECT_EQ(0, a.steps_ns);
  EXPECT_EQ(0.0, a.goodput);
  EXPECT_TRUE(a.lost.empty());
  EXPECT_EQ(0, a.startup_ns);
  EXPECT_EQ(S(10), a.other_ns);
}

TEST(RunTimelineTest, RunningAttemptEndsNowAndStepsAreClamped) {
  RunTimeline run;
  run.now_ns = S(300);
  // A worker's clock a little ahead: its last step after now counts as now.
  run.attempts.push_back(Attempt(1, 100, std::nullopt, AttemptState::kRunning, AttemptEnd::kNone,
                                 {Worker(0, {}, 99, 301)}));
  const RunAccount a = AccountRun(run);
  EXPECT_EQ(S(200), a.wall_ns);
  EXPECT_EQ(S(200), a.steps_ns);
  EXPECT_DOUBLE_EQ(1.0, a.goodput);
}

TEST(RunTimelineTest, StepSamplesCountWhenProgressIsMissing) {
  AttemptTimeline a = Attempt(1, 0, 100, AttemptState::kSucceeded, AttemptEnd::kNone,
                              {Worker(0, {}, {}, {}), Worker(1, {}, 20, 50)});
  a.workers[0].samples = {{S(10), 1}, {S(60), 7}};
  const auto span = AttemptSteps(a, S(1000));
  ASSERT_TRUE(span);
  EXPECT_EQ(S(10), span->first_ns);
  EXPECT_EQ(S(60), span->last_ns);
}

TEST(RunTimelineTest, CausesOfAnEnd) {
  AttemptTimeline a;
  a.state = AttemptState::kStopped;
  EXPECT_EQ(LostCause::kStop, LostCauseOf(a));
  a.state = AttemptState::kSucceeded;
  EXPECT_FALSE(LostCauseOf(a));
  a.state = AttemptState::kFailed;
  EXPECT_EQ(LostCause::kFailure, LostCauseOf(a));
  a.ended_by = AttemptEnd::kHang;
  EXPECT_EQ(LostCause::kHang, LostCauseOf(a));
  a.ended_by = AttemptEnd::kPreemption;
  EXPECT_EQ(LostCause::kPreemption, LostCauseOf(a));
}

TEST(RunTimelineTest, LoadsFromTheStore) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "run-timeline-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  JobStore store(dir / "podrun.db");
  JobRecord job;
  job.name = "train";
  job.pod = "local:2";
  job.hosts = {{0, "", "w0", 0, "w0"}, {1, "", "w1", 0, "w1"}};
  job = store.CreateJob(job);
  const int first = store.AddAttempt(job.id, {0, 1}, AttemptReason::kLaunch, S(1000));
  RunRecords records(store);
  records.SetPhases(job.id, first,
                    {{0, "sync", S(1002), S(1003), false},
                     {0, "agents", S(1000), S(1002), false},
                     {1, "agents", S(1000), S(1001), true}});
  records.SaveProgress(job.id, first,
                       {{.worker = 0,
                         .step = 40,
                         .step_ns = S(1050),
                         .first_step_ns = S(1010),
                         .steps_per_s = 1.0,
                         .straggler = std::nullopt}},
                       {{.worker = 0, .replace = true, .samples = {{S(1010), 1}, {S(1050), 40}}}});
  store.UpdateWorker(job.id, first, 1,
                     {.state = WorkerState::kFailed, .end_ns = S(1001), .error = "refused"});
  store.SetAttemptEnd(job.id, first, AttemptEnd::kPreemption, "w0: lost");
  store.SetAttemptState(job.id, first, AttemptState::kFailed, 1, S(1060));
  records.SetHangReport(job.id, first, {.made_ns = S(1055), .text = "w0: suspect", .json = "{}"});
  RecoveryRecords recovery(store);
  const int64_t id = recovery.AddPreemption(job.id, {.id = 0,
                                                     .attempt = first,
                                                     .node = "n",
                                                     .state = "PREEMPTED",
                                                     .seen_ns = S(1061),
                                                     .back_ns = std::nullopt,
                                                     .recreated = false});
  recovery.SetPreemptionBack(id, S(1100));

  const RunTimeline run = LoadRunTimeline(store, job, S(2000));
  EXPECT_EQ(job.id, run.job_id);
  ASSERT_EQ(1u, run.attempts.size());
  const AttemptTimeline& a = run.attempts[0];
  EXPECT_EQ(AttemptEnd::kPreemption, a.ended_by);
  EXPECT_EQ("w0: lost", a.cause);
  ASSERT_EQ(2u, a.workers.size());
  ASSERT_EQ(2u, a.workers[0].phases.size());
  EXPECT_EQ("agents", a.workers[0].phases[0].phase);
  EXPECT_EQ("sync", a.workers[0].phases[1].phase);
  EXPECT_EQ(S(1010), a.workers[0].first_step_ns);
  EXPECT_EQ(40, a.workers[0].last_step);
  EXPECT_EQ(2u, a.workers[0].samples.size());
  EXPECT_TRUE(a.workers[1].phases[0].failed);
  EXPECT_EQ(WorkerState::kFailed, a.workers[1].state);
  EXPECT_EQ("refused", a.workers[1].error);
  EXPECT_FALSE(a.workers[1].first_step_ns);
  ASSERT_TRUE(a.hang_report);
  EXPECT_EQ("w0: suspect", a.hang_report->text);
  ASSERT_EQ(1u, run.recoveries.size());
  EXPECT_EQ(S(1100), run.recoveries[0].back_ns);
  EXPECT_STREQ("waiting for READY", run.recoveries[0].what());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

TEST(RunTimelineTest, TheNodeTheLaunchCreatedIsPartOfTheStartupAndTheWallTime) {
  RunTimeline run;
  run.now_ns = S(1000);
  // The node is created from 0 s to 100 s; the attempt starts at 110 s, steps from 120 s to
  // 200 s and ends at 200 s.
  AttemptTimeline a = Attempt(1, 110, 200, AttemptState::kSucceeded, AttemptEnd::kNone,
                              {Worker(0, {{"agents", S(112), S(115), false}}, 120, 200)});
  a.provisioning = {{"creating", S(0), S(100), false}};
  run.attempts.push_back(a);
  const RunAccount account = AccountRun(run);
  EXPECT_EQ(S(0), account.start_ns);
  EXPECT_EQ(S(200), account.wall_ns);
  EXPECT_EQ(S(80), account.steps_ns);
  EXPECT_DOUBLE_EQ(0.4, account.goodput);
  EXPECT_EQ(S(120), account.startup_ns);
  ASSERT_GE(account.startup.size(), 4u);
  EXPECT_EQ("creating", account.startup[0].part);
  EXPECT_EQ(S(100), account.startup[0].ns);
  EXPECT_EQ("launch", account.startup[1].part);
  EXPECT_EQ(S(12), account.startup[1].ns);  // 100 s to the first phase at 112 s
  EXPECT_EQ("agents", account.startup[2].part);
  EXPECT_EQ(S(3), account.startup[2].ns);
  EXPECT_EQ("first step", account.startup[3].part);
  EXPECT_EQ(S(5), account.startup[3].ns);
  EXPECT_EQ(0, account.other_ns);
}

}  // namespace
}  // namespace podrun
