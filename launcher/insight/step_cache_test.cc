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

}  // namespace
}  // namespace podrun
