#include "worker/supervisor/step_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace podrun::agent {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

TEST(StepReaderTest, StepsFromLinesCutAnywhereAndFromProgressBars) {
  StepReader r(kDefaultProgressPattern);
  ASSERT_TRUE(r.enabled());
  r.Add("loading\nst", 1 * kSecond);
  EXPECT_FALSE(r.changed());
  r.Add("ep 3 loss 0.5\n", 2 * kSecond);  // a line over two chunks: its end's time
  ASSERT_TRUE(r.changed());
  v1::StepRecord first = r.TakeRecord(2 * kSecond);
  EXPECT_FALSE(r.changed());
  EXPECT_TRUE(first.has_step());
  EXPECT_EQ(3, first.step());
  EXPECT_EQ(2 * kSecond, first.step_ns());
  EXPECT_EQ(2 * kSecond, first.first_step_ns());
  r.Add("Step 4/10 [====  ]\rStep 5/10 [=====  ]\r", 3 * kSecond);  // a redrawn bar
  r.Add("step 5 again\n", 4 * kSecond);                             // the same step: not new
  v1::StepRecord second = r.TakeRecord(4 * kSecond);
  EXPECT_EQ(5, second.step());
  EXPECT_EQ(3 * kSecond, second.step_ns());
  EXPECT_EQ(2 * kSecond, second.first_step_ns());
  ASSERT_EQ(2, second.samples_size());  // 3 at 2 s, 5 at 3 s (the chunk's last step)
  EXPECT_EQ(3, second.samples(0).step());
  EXPECT_EQ(5, second.samples(1).step());
  EXPECT_EQ(4 * kSecond, second.written_ns());
}

TEST(StepReaderTest, EachStreamHasItsOwnLineSoStderrNeverCutsAStep) {
  StepReader r(kDefaultProgressPattern);
  r.Add("step 123", kSecond, /*stream=*/0);              // stdout, the line not ended yet
  r.Add("warning: slow disk\n", kSecond, /*stream=*/1);  // stderr in between
  r.Add("45 loss 0.1\n", 2 * kSecond, /*stream=*/0);     // stdout ends its line
  EXPECT_EQ(12345, r.TakeRecord(2 * kSecond).step());
}

TEST(StepReaderTest, AChunksLastStepCountsWhateverFollowsIt) {
  StepReader r(kDefaultProgressPattern);
  std::string chunk = "tail of an earlier line step 1\n";
  for (int i = 2; i <= 500; ++i) chunk += "step " + std::to_string(i) + " loss 0.5\n";
  chunk += "saving a checkpoint\n\nstep 50";  // no step after 500 ends here; "step 50" goes on
  r.Add(chunk, kSecond);
  v1::StepRecord record = r.TakeRecord(kSecond);
  EXPECT_EQ(500, record.step());
  ASSERT_EQ(1, record.samples_size());
  r.Add("1 loss 0.4\n", 2 * kSecond);  // the line begun in the chunk before: step 501
  EXPECT_EQ(501, r.TakeRecord(2 * kSecond).step());
  StepReader none(kDefaultProgressPattern);
  none.Add("step 7 starts\nno step here\nnor here\n", kSecond);  // only the first line has one
  EXPECT_EQ(7, none.TakeRecord(kSecond).step());
}

// Looking back, lines are prefiltered a block at a time: the last step is found wherever it is,
// however many lines without one (with digits, with "step" in another case, without a number)
// follow it, and however the blocks fall.
TEST(StepReaderTest, TheLastStepIsFoundBehindManyLinesWithout) {
  for (int noise_lines : {0, 1, 39, 40, 41, 200, 2000}) {
    for (int step_at : {0, 1, 7}) {
      std::string chunk = "the line begun before\n";
      for (int i = 0; i < 10; ++i) {
        chunk += i == step_at ? "Step 42 loss 0.1\n" : "warming up 3 of 9\n";
      }
      for (int i = 0; i < noise_lines; ++i) {
        chunk += i % 7 == 0 ? "the STEP is slow: 12 GB/s\n"
                            : "aGVsbG8gd29ybGQ0123456789+/"
                              "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQR\n";
      }
      StepReader r(kDefaultProgressPattern);
      r.Add(chunk, kSecond);
      ASSERT_TRUE(r.changed()) << noise_lines << " lines after, step in line " << step_at;
      EXPECT_EQ(42, r.TakeRecord(kSecond).step()) << noise_lines << " lines after";
    }
  }
}

TEST(StepReaderTest, OnlyALinesStartIsLookedAtAndNoneIsOff) {
  StepReader r(kDefaultProgressPattern);
  r.Add(std::string(StepReader::kLineBytes, 'x') + " step 9\n", kSecond);
  EXPECT_FALSE(r.changed());
  r.Add("step 10\n", kSecond);
  EXPECT_EQ(10, r.TakeRecord(kSecond).step());
  StepReader off("");
  EXPECT_FALSE(off.enabled());
  off.Add("step 1\n", kSecond);
  EXPECT_FALSE(off.changed());
  EXPECT_FALSE(off.TakeRecord(kSecond).has_step());
}

TEST(StepReaderTest, ARecordStaysBoundedWhateverTheRunsLength) {
  StepReader r(kDefaultProgressPattern);
  // A day of ten steps a second.
  for (int64_t i = 0; i < 24 * 3600 * 10; ++i) {
    r.Add("step " + std::to_string(i) + "\n", i * kSecond / 10);
  }
  v1::StepRecord record = r.TakeRecord(0);
  EXPECT_LE(record.samples_size(), 256);
  EXPECT_GE(record.samples_size(), 128);
  EXPECT_EQ(0, record.samples(0).step());
  EXPECT_LE(record.recent_size(), static_cast<int>(StepReader::kRecentPoints) + 8);
  // The window spans the last minute, and its newest point is the latest step.
  EXPECT_EQ(record.step(), record.recent(record.recent_size() - 1).step());
  EXPECT_LE(record.recent(0).time_ns(), record.step_ns() - StepReader::kRecentNs + kSecond);
  EXPECT_LT(record.SerializeAsString().size(), 8u << 10);
}

TEST(StepReaderTest, CountingAgainStartsANewRateWindow) {
  StepReader r(kDefaultProgressPattern);
  for (int i = 0; i < 10; ++i) r.Add("step " + std::to_string(100 + i) + "\n", i * kSecond);
  r.Add("step 1\n", 20 * kSecond);
  v1::StepRecord record = r.TakeRecord(0);
  EXPECT_EQ(1, record.step());
  ASSERT_EQ(1, record.recent_size());
  EXPECT_EQ(1, record.recent(0).step());
}

}  // namespace
}  // namespace podrun::agent
