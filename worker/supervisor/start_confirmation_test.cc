// Tests of the start's confirmation window as the supervisor keeps it: due once, only when
// required, armed and unconfirmed; a confirmation in time holds for ever; one too late is refused.
#include "worker/supervisor/start_confirmation.h"

#include <gtest/gtest.h>

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;
using Clock = StartConfirmation::Clock;

TEST(StartConfirmation, NothingRequiredIsNeverDue) {
  StartConfirmation c;
  const auto t0 = Clock::now();
  c.Arm(t0);
  EXPECT_FALSE(c.Due(t0 + 1h));
  EXPECT_EQ(c.deadline(), Clock::time_point::max());
  EXPECT_TRUE(c.Confirm());
}

TEST(StartConfirmation, AnUnconfirmedStartIsDueOnceAtItsDeadline) {
  StartConfirmation c;
  c.Require(3000ms, 7s);
  const auto t0 = Clock::now();
  EXPECT_FALSE(c.Due(t0 + 1h)) << "not armed: the job has not been released";
  c.Arm(t0);
  EXPECT_EQ(c.deadline(), t0 + 3000ms);
  EXPECT_FALSE(c.Due(t0 + 2999ms));
  EXPECT_TRUE(c.Due(t0 + 3000ms));
  EXPECT_TRUE(c.given_up());
  EXPECT_EQ(c.grace(), 7s);
  EXPECT_FALSE(c.Due(t0 + 4000ms)) << "said once";
  EXPECT_FALSE(c.Confirm()) << "too late: the job is being stopped";
  EXPECT_FALSE(c.confirmed());
}

TEST(StartConfirmation, AConfirmedStartIsNeverDue) {
  StartConfirmation c;
  c.Require(1000ms, 1s);
  const auto t0 = Clock::now();
  c.Arm(t0);
  EXPECT_TRUE(c.Confirm());
  EXPECT_FALSE(c.Due(t0 + 24h));
  EXPECT_EQ(c.deadline(), Clock::time_point::max());
  EXPECT_FALSE(c.given_up());
}

TEST(StartConfirmation, AConfirmationBeforeTheReleaseCounts) {
  StartConfirmation c;
  c.Require(1000ms, 1s);
  EXPECT_TRUE(c.Confirm());
  const auto t0 = Clock::now();
  c.Arm(t0);
  EXPECT_FALSE(c.Due(t0 + 1h));
}

TEST(StartConfirmation, TheWindowCannotChangeOnceArmed) {
  StartConfirmation c;
  c.Require(1000ms, 1s);
  const auto t0 = Clock::now();
  c.Arm(t0);
  c.Require(1h, 1s);  // a Start asked again after the release
  EXPECT_EQ(c.deadline(), t0 + 1000ms);
  c.Arm(t0 + 1h);
  EXPECT_EQ(c.deadline(), t0 + 1000ms);
}

}  // namespace
}  // namespace podrun::agent
