#include "launcher/insight/step_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace podrun {
namespace {

constexpr int64_t kS = 1'000'000'000;

// The workers' records replace the store's steps and samples; the straggler flag the driver set
// stays; a worker that said nothing keeps what the store had.
TEST(StepCacheTest, TheWorkersRecordsRefreshTheStoreAndTheStragglerFlagStays) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("step-cache-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  JobStore store(dir / "podrun.db");
  JobRecord job;
  job.name = "j";
  job.pod = "hosts:2";
  job.spec_text = "run: x\n";
  job.spec_path = "/j.yaml";
  job.hosts = {{0, "u", "a", 22, "a"}, {1, "u", "b", 22, "b"}};
  job = store.CreateJob(job);
  const int attempt = store.AddAttempt(job.id, {0, 1}, AttemptReason::kLaunch, 100);
  RunRecords records(store);
  records.SaveProgress(job.id, attempt,
                       {{.worker = 0,
                         .step = 3,
                         .step_ns = 3 * kS,
                         .first_step_ns = kS,
                         .steps_per_s = 1.0,
                         .straggler = StragglerNote{0.4, 1.0}},
                        {.worker = 1,
                         .step = 4,
                         .step_ns = 4 * kS,
                         .first_step_ns = kS,
                         .steps_per_s = 1.0,
                         .straggler = std::nullopt}},
                       {{.worker = 0, .replace = true, .samples = {{kS, 1}}}});
  AgentSteps w0{.step = 20,
                .step_ns = 21 * kS,
                .first_step_ns = 2 * kS,
                .recent = {{11 * kS, 10}, {21 * kS, 20}},
                .samples = {{2 * kS, 1}, {21 * kS, 20}},
                .now_ns = 0};
  CacheSteps(store, job.id, attempt, {{.worker = 0, .steps = w0, .clock_offset_ns = kS}},
             /*now_ns=*/20 * kS, std::chrono::seconds(10));
  auto progress = records.Progress(job.id, attempt);
  ASSERT_EQ(2u, progress.size());
  EXPECT_EQ(20, progress[0].step);
  EXPECT_EQ(20 * kS, progress[0].step_ns);  // the launcher's clock
  EXPECT_EQ(1 * kS, progress[0].first_step_ns);
  ASSERT_TRUE(progress[0].steps_per_s);
  EXPECT_NEAR(1.0, *progress[0].steps_per_s, 0.01);  // 10 steps in the 10 s window
  ASSERT_TRUE(progress[0].straggler);
  EXPECT_EQ(0.4, progress[0].straggler->steps_per_s);
  EXPECT_EQ((std::vector<StepSample>{{1 * kS, 1}, {20 * kS, 20}}),
            records.StepSamples(job.id, attempt, 0));
  EXPECT_EQ(4, progress[1].step);  // not asked: as it was
  std::filesystem::remove_all(dir);
}

// With no driver, the stragglers come from the workers' own records: the rate over the last
// straggler_seconds against the gang's median over the same window.
TEST(StepCacheTest, StragglersAreWorkedOutFromTheWorkersRecordsOverTheRulesWindow) {
  auto steady = [](int worker, int64_t per_second, int64_t offset_ns) {
    AgentSteps s;
    for (int64_t t = 0; t <= 20; ++t) s.samples.push_back({t * kS + offset_ns, t * per_second});
    s.step = 20 * per_second;
    s.step_ns = 20 * kS + offset_ns;
    s.first_step_ns = offset_ns;
    return FetchedSteps{.worker = worker, .steps = s, .clock_offset_ns = offset_ns};
  };
  const std::vector<FetchedSteps> gang = {steady(0, 10, 0), steady(1, 10, 5 * kS),
                                          steady(2, 3, -2 * kS), steady(3, 9, 0)};
  auto verdict = StragglersOf(gang, 20 * kS, {.ratio = 0.5, .after = std::chrono::seconds(10)});
  ASSERT_EQ(4u, verdict.size());
  EXPECT_FALSE(verdict[0]);
  EXPECT_FALSE(verdict[1]);  // its clock is 5 s ahead: the same rate in the launcher's clock
  EXPECT_FALSE(verdict[3]);  // 9 of a median of 9.5: not below half
  ASSERT_TRUE(verdict[2]);
  EXPECT_NEAR(3.0, verdict[2]->steps_per_s, 0.01);
  EXPECT_NEAR(9.5, verdict[2]->median_steps_per_s, 0.01);
  // A record shorter than the window says nothing yet; one worker alone has no median.
  EXPECT_TRUE(
      StragglersOf(gang, 20 * kS, {.ratio = 0.5, .after = std::chrono::seconds(30)}).empty());
  EXPECT_TRUE(StragglersOf({gang[2]}, 20 * kS, {}).empty());
}

}  // namespace
}  // namespace podrun
