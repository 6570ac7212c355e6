#include "launcher/insight/step_tracker.h"

#include <gtest/gtest.h>

#include <string>

namespace podrun {
namespace {

constexpr int64_t kS = 1'000'000'000;

LogRecord At(double seconds, const std::string& text) {
  LogRecord r;
  r.time_ns = static_cast<int64_t>(seconds * 1e9);
  r.data = text;
  return r;
}

bool Says(const std::vector<std::string>& said, const std::string& part) {
  for (const std::string& s : said) {
    if (s.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(StepTrackerTest, StepsComeFromWholeLinesSplitAcrossRecords) {
  StepTracker t(kDefaultProgressPattern, {0}, {});
  t.Add(0, {At(1, "loss 3\nst"), At(2, "ep 41, loss 2\n"), At(3, "step 42\r")});
  auto p = t.Progress();
  ASSERT_EQ(1u, p.size());
  EXPECT_EQ(42, p[0].step);
  EXPECT_EQ(3 * kS, p[0].step_ns);
  EXPECT_EQ(2 * kS, p[0].first_step_ns);  // step 41, when its line ended
}

TEST(StepTrackerTest, AProgramWithoutStepsRecordsAndSaysNothing) {
  StepTracker t(kDefaultProgressPattern, {0, 1}, {});
  for (int s = 0; s < 100; ++s) {
    t.Add(0, {At(s, "loss 0.3\n")});
    t.Add(1, {At(s, "hello\n")});
  }
  EXPECT_TRUE(t.Check(100 * kS).empty());
  std::vector<WorkerProgress> progress;
  std::vector<StepSamplesUpdate> samples;
  t.TakeChanges(&progress, &samples);
  EXPECT_TRUE(samples.empty());
  for (const auto& p : t.Progress()) EXPECT_FALSE(p.step.has_value());
  StepTracker off("", {0}, {});
  off.Add(0, {At(1, "step 5\n")});
  EXPECT_FALSE(off.Progress()[0].step.has_value());
}

TEST(StepTrackerTest, ASlowWorkerIsFlaggedOnceAfterTheStragglerTimeAndTheOthersAreNot) {
  StepTracker t(kDefaultProgressPattern, {0, 1, 2, 3},
                {.ratio = 0.5, .after = std::chrono::seconds(10)});
  std::vector<std::string> said;
  int64_t slow_step = 0;
  for (int tenth = 0; tenth <= 400; ++tenth) {  // 40 s; workers 0-2 at 10 steps/s, w3 at 2.5
    const double now = tenth / 10.0;
    for (int w = 0; w < 3; ++w) t.Add(w, {At(now, "step " + std::to_string(tenth) + "\n")});
    if (tenth % 4 == 0) t.Add(3, {At(now, "step " + std::to_string(slow_step++) + "\n")});
    if (tenth % 10 == 0) {
      for (auto& s : t.Check(static_cast<int64_t>(now * 1e9))) said.push_back(s);
    }
  }
  ASSERT_EQ(1u, said.size()) << said.size();
  EXPECT_EQ(0u, said[0].find("w3 is a straggler: 2.50 steps/s vs median 10.00")) << said[0];
  auto p = t.Progress();
  EXPECT_EQ("", p[0].straggler);
  EXPECT_NE("", p[3].straggler);
  EXPECT_NEAR(10.0, *p[0].steps_per_s, 0.3);
  EXPECT_NEAR(2.5, *p[3].steps_per_s, 0.3);
}

TEST(StepTrackerTest, ABriefDipIsNotAStraggler) {
  StepTracker t(kDefaultProgressPattern, {0, 1, 2},
                {.ratio = 0.5, .after = std::chrono::seconds(30)});
  std::vector<std::string> said;
  int64_t step2 = 0;
  for (int s = 0; s <= 60; ++s) {
    t.Add(0, {At(s, "step " + std::to_string(s) + "\n")});
    t.Add(1, {At(s, "step " + std::to_string(s) + "\n")});
    if (s < 20 || s > 30) t.Add(2, {At(s, "step " + std::to_string(++step2) + "\n")});
    for (auto& m : t.Check(s * kS)) said.push_back(m);
  }
  EXPECT_FALSE(Says(said, "straggler")) << (said.empty() ? "" : said[0]);
}

TEST(StepTrackerTest, AWorkerThatStopsBehindTheOthersIsNamedAtOnceAndOnce) {
  StepTracker t(kDefaultProgressPattern, {0, 1, 2, 3}, {});
  for (int s = 0; s <= 5; ++s) {
    for (int w = 0; w < 4; ++w) t.Add(w, {At(s, "step " + std::to_string(s) + "\n")});
  }
  // w2 is stuck at 5; the others reach 6, then wait for it.
  for (int w : {0, 1, 3}) t.Add(w, {At(6, "step 6\n")});
  EXPECT_TRUE(t.Check(8 * kS).empty());  // 3 s: within the grace
  auto said = t.Check(12 * kS);
  ASSERT_EQ(1u, said.size());
  EXPECT_EQ("w2 stopped at step 5 for 7 s while another worker is at 6", said[0]);
  EXPECT_TRUE(t.Check(20 * kS).empty());
  // Ended workers are not compared.
  StepTracker u(kDefaultProgressPattern, {0, 1}, {});
  u.Add(0, {At(0, "step 1\n")});
  u.Add(1, {At(0, "step 2\n")});
  u.Ended(0);
  EXPECT_TRUE(u.Check(60 * kS).empty());
}

TEST(StepTrackerTest, ChangesCarryTheThinnedSamplesAndTheStepsWithTheLaunchersClock) {
  StepTracker t(kDefaultProgressPattern, {0}, {});
  t.Add(0, {At(10, "step 1\n"), At(11, "step 2\n")}, /*clock_offset_ns=*/2 * kS);
  std::vector<WorkerProgress> progress;
  std::vector<StepSamplesUpdate> samples;
  t.TakeChanges(&progress, &samples);
  ASSERT_EQ(1u, progress.size());
  EXPECT_EQ(9 * kS, progress[0].step_ns);
  ASSERT_EQ(1u, samples.size());
  EXPECT_EQ((std::vector<StepSample>{{8 * kS, 1}, {9 * kS, 2}}), samples[0].samples);
  progress.clear();
  samples.clear();
  t.TakeChanges(&progress, &samples);
  EXPECT_TRUE(progress.empty());
  EXPECT_TRUE(samples.empty());
}

TEST(StepTrackerTest, ALongLineIsLookedAtOnlyInItsStart) {
  StepTracker t(kDefaultProgressPattern, {0}, {});
  t.Add(0,
        {At(1, std::string(5000, 'x') + " step 9\n" + "step 3 " + std::string(5000, 'y') + "\n")});
  EXPECT_EQ(3, t.Progress()[0].step);
}

}  // namespace
}  // namespace podrun
