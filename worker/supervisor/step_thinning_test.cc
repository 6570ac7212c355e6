#include "worker/supervisor/step_thinning.h"

#include <gtest/gtest.h>

namespace podrun::agent {
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

TEST(StepThinningTest, AtMostOneSampleASecondAtFirst) {
  StepThinning t;
  EXPECT_TRUE(t.Add(0, 0));
  EXPECT_FALSE(t.Add(kSecond / 2, 1));  // too close: not kept
  EXPECT_TRUE(t.Add(kSecond, 2));
  EXPECT_EQ((std::vector<StepPoint>{{0, 0}, {kSecond, 2}}), t.samples());
}

TEST(StepThinningTest, SamplesOutOfTimeOrderAreIgnored) {
  StepThinning t;
  t.Add(10 * kSecond, 5);
  t.Add(3 * kSecond, 2);
  ASSERT_EQ(1u, t.samples().size());
  EXPECT_EQ(5, t.samples()[0].step);
}

}  // namespace
}  // namespace podrun::agent
