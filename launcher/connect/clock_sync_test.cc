#include "launcher/connect/clock_sync.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ClockSync, OffsetOfASymmetricRoundTrip) {
  // Sent at 1000, answered at 1100: the agent read its clock at our 1050, and said 5050.
  ClockOffset o = EstimateClockOffset({{1000, 5050, 1100}});
  EXPECT_EQ(o.offset_ns, 4000);
  EXPECT_EQ(o.rtt_ns, 100);
}

TEST(ClockSync, QuickestSampleWins) {
  // A slow sample with a skewed answer, then a quick one; the quick one decides.
  ClockOffset o = EstimateClockOffset({{0, 900, 1000}, {2000, 1990, 2010}, {3000, 3500, 3400}});
  EXPECT_EQ(o.rtt_ns, 10);
  EXPECT_EQ(o.offset_ns, 1990 - 2005);
}

TEST(ClockSync, NegativeOffset) {
  ClockOffset o = EstimateClockOffset({{1'000'000, 0, 1'000'200}});
  EXPECT_EQ(o.offset_ns, -1'000'100);
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
  // A quick pod: the lead, two deliveries and the slack, in whole milliseconds.
  EXPECT_EQ(StartConfirmWindow(milliseconds(25), std::chrono::microseconds(2500), seconds(10)),
            milliseconds(10'030));
  // A slow one waits longer, not the same.
  EXPECT_EQ(StartConfirmWindow(milliseconds(1600), milliseconds(800), seconds(10)),
            milliseconds(13'200));
  // Never past what an agent keeps a job unconfirmed for.
  EXPECT_EQ(StartConfirmWindow(kMaxStartLead, std::chrono::hours(1), seconds(10)),
            kMaxStartConfirmWindow);
}

}  // namespace
}  // namespace podrun
