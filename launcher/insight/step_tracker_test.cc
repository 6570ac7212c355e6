#include "launcher/insight/step_tracker.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace podrun {
namespace {

constexpr int64_t kS = 1'000'000'000;

// The workers' step records as their supervisors keep them (worker/supervisor/step_reader.h, in
// short): the latest step, the last minute's points, every step as a sample.
class Records {
 public:
  explicit Records(StepTracker& t) : t_(t) {}
  // Worker `w` printed `step` at `seconds`; the tracker is handed its record.
  void Step(int w, double seconds, int64_t step, int64_t clock_offset_ns = 0) {
    AgentSteps& r = records_[w];
    const int64_t ns = static_cast<int64_t>(seconds * 1e9);
    if (r.step == step) return;
    if (r.step && step < *r.step) r.recent.clear();
    r.step = step;
    r.step_ns = ns;
    if (!r.first_step_ns) r.first_step_ns = ns;
    r.recent.push_back({ns, step});
    while (r.recent.size() > 2 && r.recent[1].time_ns <= ns - 60 * kS)
      r.recent.erase(r.recent.begin());
    r.samples.push_back({ns, step});
    t_.Update(w, r, clock_offset_ns);
  }

 private:
  StepTracker& t_;
  std::map<int, AgentSteps> records_;
};

bool Says(const std::vector<std::string>& said, const std::string& part) {
  for (const std::string& s : said) {
    if (s.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(StepTrackerTest, TheWorkersRecordGivesTheStepAndNoRecordNothing) {
  StepTracker t(true, {0, 1}, {});
  Records r(t);
  r.Step(0, 2, 41);
  r.Step(0, 3, 42);
  t.Update(1, AgentSteps{});  // a worker with no step yet
  auto p = t.Progress();
  ASSERT_EQ(2u, p.size());
  EXPECT_EQ(42, p[0].step);
  EXPECT_EQ(3 * kS, p[0].step_ns);
  EXPECT_EQ(2 * kS, p[0].first_step_ns);
  EXPECT_FALSE(p[1].step.has_value());
  EXPECT_TRUE(t.Check(100 * kS).empty());
  StepTracker off(false, {0}, {});
  Records(off).Step(0, 1, 5);
  EXPECT_FALSE(off.Progress()[0].step.has_value());
  EXPECT_TRUE(off.Check(100 * kS).empty());
}

TEST(StepTrackerTest, ASlowWorkerIsFlaggedOnceAfterTheStragglerTimeAndTheOthersAreNot) {
  StepTracker t(true, {0, 1, 2, 3}, {.ratio = 0.5, .after = std::chrono::seconds(10)});
  Records r(t);
  std::vector<std::string> said;
  int64_t slow_step = 0;
  for (int tenth = 0; tenth <= 400; ++tenth) {  // 40 s; workers 0-2 at 10 steps/s, w3 at 2.5
    const double now = tenth / 10.0;
    for (int w = 0; w < 3; ++w) r.Step(w, now, tenth);
    if (tenth % 4 == 0) r.Step(3, now, slow_step++);
    if (tenth % 10 == 0) {
      for (auto& s : t.Check(static_cast<int64_t>(now * 1e9))) said.push_back(s);
    }
  }
  ASSERT_EQ(1u, said.size()) << said.size();
  EXPECT_EQ(0u, said[0].find("w3 is a straggler: 2.50 steps/s vs median 10.00")) << said[0];
  auto p = t.Progress();
  EXPECT_FALSE(p[0].straggler);
  ASSERT_TRUE(p[3].straggler);
  EXPECT_NEAR(2.5, p[3].straggler->steps_per_s, 0.3);
  EXPECT_NEAR(10.0, p[3].straggler->median_steps_per_s, 0.3);
  EXPECT_NEAR(10.0, *p[0].steps_per_s, 0.3);
  EXPECT_NEAR(2.5, *p[3].steps_per_s, 0.3);
}

TEST(StepTrackerTest, ABriefDipIsNotAStraggler) {
  StepTracker t(true, {0, 1, 2}, {.ratio = 0.5, .after = std::chrono::seconds(30)});
  Records r(t);
  std::vector<std::string> said;
  int64_t step2 = 0;
  for (int s = 0; s <= 60; ++s) {
    r.Step(0, s, s);
    r.Step(1, s, s);
    if (s < 20 || s > 30) r.Step(2, s, ++step2);
    for (auto& m : t.Check(s * kS)) said.push_back(m);
  }
  EXPECT_FALSE(Says(said, "straggler")) << (said.empty() ? "" : said[0]);
}

TEST(StepTrackerTest, AWorkerThatStopsBehindTheOthersIsNamedAtOnceAndOnce) {
  StepTracker t(true, {0, 1, 2, 3}, {});
  Records r(t);
  for (int s = 0; s <= 5; ++s) {
    for (int w = 0; w < 4; ++w) r.Step(w, s, s);
  }
  // w2 is stuck at 5; the others reach 6, then wait for it.
  for (int w : {0, 1, 3}) r.Step(w, 6, 6);
  EXPECT_TRUE(t.Check(8 * kS).empty());  // 3 s: within the grace
  auto said = t.Check(12 * kS);
  ASSERT_EQ(1u, said.size());
  EXPECT_EQ("w2 stopped at step 5 for 7 s while another worker is at 6", said[0]);
  EXPECT_TRUE(t.Check(20 * kS).empty());
  // Ended workers are not compared.
  StepTracker u(true, {0, 1}, {});
  Records ru(u);
  ru.Step(0, 0, 1);
  ru.Step(1, 0, 2);
  u.Ended(0);
  EXPECT_TRUE(u.IsEnded(0));
  EXPECT_TRUE(u.Check(60 * kS).empty());
}

TEST(StepTrackerTest, ChangesCarryTheWorkersSamplesAndTheStepsWithTheLaunchersClock) {
  StepTracker t(true, {0}, {});
  Records r(t);
  r.Step(0, 10, 1, /*clock_offset_ns=*/2 * kS);
  r.Step(0, 11, 2, /*clock_offset_ns=*/2 * kS);
  std::vector<WorkerProgress> progress;
  std::vector<StepSamplesUpdate> samples;
  t.TakeChanges(&progress, &samples);
  ASSERT_EQ(1u, progress.size());
  EXPECT_EQ(9 * kS, progress[0].step_ns);
  ASSERT_EQ(1u, samples.size());
  EXPECT_TRUE(samples[0].replace);  // the worker's record is the whole record
  EXPECT_EQ((std::vector<StepSample>{{8 * kS, 1}, {9 * kS, 2}}), samples[0].samples);
  progress.clear();
  samples.clear();
  t.TakeChanges(&progress, &samples);
  EXPECT_TRUE(progress.empty());
  EXPECT_TRUE(samples.empty());
}

}  // namespace
}  // namespace podrun
