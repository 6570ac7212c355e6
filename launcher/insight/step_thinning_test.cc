#include "launcher/insight/step_thinning.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(StepThinningTest, AWeekOfOneStepASecondKeepsABoundedEvenlySpreadRecord) {
  StepThinning t;
  const int64_t week = 7 * 24 * 3600;
  for (int64_t s = 0; s < week; ++s) t.Add(s * kSecond, s);
  const auto& samples = t.samples();
  EXPECT_LE(samples.size(), StepThinning::kMaxSamples);
  EXPECT_GE(samples.size(), StepThinning::kMaxSamples / 2);
  EXPECT_EQ(0, samples.front().step);  // the start stays
  // The last sample is within one spacing of the end, and the spacing is even.
  EXPECT_GE(samples.back().time_ns, (week - 1) * kSecond - t.spacing_ns());
  for (size_t i = 1; i < samples.size(); ++i) {
    EXPECT_EQ(t.spacing_ns(), samples[i].time_ns - samples[i - 1].time_ns) << i;
  }
}

TEST(StepThinningTest, ChangesAreAppendedUntilAThinningReplacesThemAll) {
  StepThinning t;
  t.Add(0, 0);
  t.Add(kSecond / 2, 1);  // too close: not kept
  t.Add(kSecond, 2);
  StepSamplesUpdate first = t.TakeChanges(3);
  EXPECT_EQ(3, first.worker);
  EXPECT_TRUE(first.replace);  // the first replaces what an earlier follower recorded
  EXPECT_EQ((std::vector<StepSample>{{0, 0}, {kSecond, 2}}), first.samples);
  StepSamplesUpdate none = t.TakeChanges(3);
  EXPECT_TRUE(none.samples.empty());
  EXPECT_FALSE(none.replace);
  t.Add(2 * kSecond, 3);
  StepSamplesUpdate second = t.TakeChanges(3);
  EXPECT_FALSE(second.replace);
  EXPECT_EQ((std::vector<StepSample>{{2 * kSecond, 3}}), second.samples);
  for (int64_t s = 3; s < 300; ++s) t.Add(s * kSecond, s);
  StepSamplesUpdate thinned = t.TakeChanges(3);
  EXPECT_TRUE(thinned.replace);
  EXPECT_EQ(t.samples(), thinned.samples);
  EXPECT_FALSE(t.TakeChanges(3).replace);
}

TEST(StepThinningTest, SamplesOutOfTimeOrderAreIgnored) {
  StepThinning t;
  t.Add(10 * kSecond, 5);
  t.Add(3 * kSecond, 2);
  ASSERT_EQ(1u, t.samples().size());
  EXPECT_EQ(5, t.samples()[0].step);
}

}  // namespace
}  // namespace podrun
