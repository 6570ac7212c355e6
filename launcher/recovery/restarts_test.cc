// Tests of the restart backoff schedule: 5 s, doubling, at most 5 minutes.
#include "launcher/recovery/restarts.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

using namespace std::chrono_literals;

TEST(RestartsTest, BackoffDoublesFromFiveSecondsUpToFiveMinutes) {
  EXPECT_EQ(RestartBackoff(1), 5s);
  EXPECT_EQ(RestartBackoff(2), 10s);
  EXPECT_EQ(RestartBackoff(3), 20s);
  EXPECT_EQ(RestartBackoff(6), 160s);
  EXPECT_EQ(RestartBackoff(7), 300s);
  EXPECT_EQ(RestartBackoff(100), 300s);
}

}  // namespace
}  // namespace podrun
