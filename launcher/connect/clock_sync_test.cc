#include "launcher/connect/clock_sync.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ClockSync, ClocksThatAgreeAreNotCorrectedByARoundTripsAsymmetry) {
  // Sent at 0, answered at 1000, the agent's clock said 900: read late in the round trip (its
  // answer queued behind others), not a clock 400 ahead. Nothing proves the clocks differ.
  ClockOffset o = EstimateClockOffset({{0, 900, 1000}});
  EXPECT_EQ(o.offset_ns, 0);
  EXPECT_EQ(o.low_ns, -100);
  EXPECT_EQ(o.high_ns, 900);
  EXPECT_EQ(o.rtt_ns, 1000);
}

TEST(ClockSync, AClockProvablyAheadIsCorrectedByWhatTheRoundTripProves) {
  // Sent at 1000, answered at 1100, the agent said 5050: its clock is 3950 to 4050 ahead.
  ClockOffset o = EstimateClockOffset({{1000, 5050, 1100}});
  EXPECT_EQ(o.offset_ns, 3950);
  EXPECT_EQ(o.rtt_ns, 100);
  // Behind: the same from the other side.
  EXPECT_EQ(EstimateClockOffset({{1'000'000, 0, 1'000'200}}).offset_ns, -1'000'000);
}

TEST(ClockSync, EverySampleNarrowsTheInterval) {
  // Two slow samples, allowing [3900, 4100] and [3990, 4300]: together [3990, 4100].
  ClockOffset o = EstimateClockOffset({{0, 4100, 200}, {1000, 5300, 1310}});
  EXPECT_EQ(o.low_ns, 3990);
  EXPECT_EQ(o.high_ns, 4100);
  EXPECT_EQ(o.offset_ns, 3990);
  EXPECT_EQ(o.rtt_ns, 200);
}

TEST(ClockSync, SamplesThatContradictEachOtherLeaveTheQuickest) {
  // [-100, 900], [-20, -10] and [100, 500] have nothing in common (a clock stepped): the
  // quickest one's interval alone.
  ClockOffset o = EstimateClockOffset({{0, 900, 1000}, {2000, 1990, 2010}, {3000, 3500, 3400}});
  EXPECT_EQ(o.rtt_ns, 10);
  EXPECT_EQ(o.low_ns, -20);
  EXPECT_EQ(o.high_ns, -10);
  EXPECT_EQ(o.offset_ns, -10);
}

ClockOffset Interval(int64_t low, int64_t high) { return {0, 0, low, high}; }

TEST(ClockSync, AgentsWhoseClocksAgreeStartWithOneOffset) {
  // Every interval holds 0: nothing is corrected.
  EXPECT_EQ(StartOffsets({Interval(-5, 3), Interval(-1, 9), Interval(-2, 2)}),
            (std::vector<int64_t>{0, 0, 0}));
  // This launcher's clock is 40-60 behind a pod whose clocks agree: one offset for all (the
  // common value nearest 0), not each one's own guess.
  EXPECT_EQ(StartOffsets({Interval(20, 80), Interval(40, 110), Interval(45, 60)}),
            (std::vector<int64_t>{45, 45, 45}));
  // One agent's clock provably differs from the others': its own interval's nearest point.
  EXPECT_EQ(StartOffsets({Interval(20, 80), Interval(40, 110), Interval(500, 600)}),
            (std::vector<int64_t>{40, 40, 500}));
  EXPECT_EQ(StartOffsets({Interval(-600, -500), Interval(-80, -20), Interval(-110, -40)}),
            (std::vector<int64_t>{-500, -40, -40}));
  EXPECT_TRUE(StartOffsets({}).empty());
}

TEST(ClockSync, StartLeadFollowsTheMeasuredReach) {
  // A quick pod: the floor.
  EXPECT_EQ(StartLead(milliseconds(25), milliseconds(3)), milliseconds(25));
  // 200 workers that all answered a Hello within 400 ms: the start is 800 ms ahead, whatever
  // Prepare (which forks a supervisor on each) took.
  EXPECT_EQ(StartLead(milliseconds(25), milliseconds(400)), milliseconds(800));
  // Twice as slow: twice as far.
  EXPECT_EQ(StartLead(milliseconds(25), milliseconds(800)), milliseconds(1600));
  // Never past what an agent waits for (it would start at once): the lead stays under it.
  EXPECT_EQ(StartLead(milliseconds(25), seconds(6)), kMaxStartLead);
  EXPECT_LT(kMaxStartLead, kMaxStartDelay);
}

TEST(ClockSync, TheConfirmationWindowIsTheSlackBeyondTheSlowestDelivery) {
  // A quick pod: the lead, two deliveries, the answers' wait and the slack, in whole milliseconds.
  EXPECT_EQ(StartConfirmWindow(milliseconds(25), std::chrono::microseconds(2500), seconds(10)),
            milliseconds(10'030) + kQuietAfterStart);
  // A slow one waits longer, not the same.
  EXPECT_EQ(StartConfirmWindow(milliseconds(1600), milliseconds(800), seconds(10)),
            milliseconds(13'200) + kQuietAfterStart);
  // Never past what an agent keeps a job unconfirmed for.
  EXPECT_EQ(StartConfirmWindow(kMaxStartLead, std::chrono::hours(1), seconds(10)),
            kMaxStartConfirmWindow);
}

}  // namespace
}  // namespace podrun
