// Tests of what `podrun status` shows of an attempt's progress: a worker's step and how long ago,
// its JSON fields, and a kept hang report's verdict (suspects first, at most N lines, then where
// the rest are; the text when the JSON has no verdict).
#include "launcher/commands/status_progress.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kNow = 1'700'000'000 * kSecond;

WorkerProgress Progress(std::optional<int64_t> step = {}, std::optional<int64_t> step_ns = {},
                        std::optional<double> rate = {},
                        std::optional<StragglerNote> straggler = {}) {
  WorkerProgress p;
  p.worker = 3;
  p.step = step;
  p.step_ns = step_ns;
  p.steps_per_s = rate;
  p.straggler = straggler;
  return p;
}

TEST(StatusProgressTest, StepAndHowLongAgo) {
  EXPECT_EQ(StepText(Progress(), kNow), "-");
  EXPECT_EQ(StepText(Progress(1513, kNow - 12 * kSecond), kNow), "1513 (12s ago)");
  EXPECT_EQ(StepText(Progress(7, kNow - 185 * kSecond), kNow), "7 (3m05s ago)");
  EXPECT_EQ(StepText(Progress(7), kNow), "7");
}

TEST(StatusProgressTest, Json) {
  nlohmann::json none = ProgressJson(Progress());
  EXPECT_TRUE(none["step"].is_null());
  EXPECT_TRUE(none["step_ns"].is_null());
  EXPECT_TRUE(none["steps_per_s"].is_null());
  EXPECT_TRUE(none["straggler"].is_null());
  nlohmann::json j = ProgressJson(Progress(1512, kNow, 0.41234, StragglerNote{0.41, 0.93}));
  EXPECT_EQ(j["step"], 1512);
  EXPECT_EQ(j["step_ns"], kNow);
  EXPECT_EQ(j["steps_per_s"], 0.412);
  EXPECT_EQ(j["straggler"], "0.41 steps/s vs median 0.93");
  EXPECT_FALSE(j.contains("worker"));  // added to status's own worker object
}

// A report as `podrun why --json` keeps it, with `n` verdict lines of which `suspects` (listed
// last here) are suspects.
HangReportRecord Report(int n, int suspects) {
  nlohmann::json verdict = nlohmann::json::array();
  for (int w = 0; w < n; ++w) {
    const bool suspect = w >= n - suspects;
    verdict.push_back(
        {{"worker", w},
         {"suspect", suspect},
         {"line", "w" + std::to_string(w) + (suspect ? ": suspect: step 1512" : ": step 1513")}});
  }
  return {.made_ns = kNow,
          .text = "the text",
          .json = nlohmann::json{{"job", "j"}, {"attempt", 1}, {"verdict", verdict}}.dump()};
}

TEST(StatusProgressTest, HangReportSuspectsFirst) {
  const std::vector<std::string> lines = HangReportLines(Report(3, 1), "job-1");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].rfind("hang report (made when the stall watch fired, ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[0].back(), ':');
  EXPECT_EQ(lines[1], "  w2: suspect: step 1512");
  EXPECT_EQ(lines[2], "  w0: step 1513");
  EXPECT_EQ(lines[3], "  w1: step 1513");
  EXPECT_EQ(HangReportJson(Report(3, 1))["verdict"].size(), 3u);
}

TEST(StatusProgressTest, HangReportAtMostNLines) {
  const std::vector<std::string> lines = HangReportLines(Report(64, 2), "job-1", 10);
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(lines[1], "  w62: suspect: step 1512");
  EXPECT_EQ(lines[2], "  w63: suspect: step 1512");
  EXPECT_EQ(lines[11], "  ... 54 more: podrun status job-1 --json");
}

TEST(StatusProgressTest, HangReportWithoutAVerdictShowsItsText) {
  const HangReportRecord report{
      .made_ns = kNow, .text = "w1: suspect: silent\n\nw0: ok\n", .json = "not json"};
  EXPECT_TRUE(HangReportJson(report).is_null());
  const std::vector<std::string> lines = HangReportLines(report, "job-1");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "  w1: suspect: silent");
  EXPECT_EQ(lines[2], "  w0: ok");
}

}  // namespace
}  // namespace podrun
