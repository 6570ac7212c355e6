#include "launcher/connect/clock_sync.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

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

TEST(ClockSync, StartLeadGrowsWithThePod) {
  EXPECT_EQ(StartLead(milliseconds(50), 1'000'000, milliseconds(5)), milliseconds(50));
  EXPECT_EQ(StartLead(milliseconds(50), 10'000'000, milliseconds(5)), milliseconds(80));
  // 200 workers whose Prepare fan-out took 700 ms: Start gets 1.4 s.
  EXPECT_EQ(StartLead(milliseconds(50), 1'000'000, milliseconds(700)), milliseconds(1400));
}

}  // namespace
}  // namespace podrun
