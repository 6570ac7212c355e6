// Tests of the stall watch's timing with an injected clock (Check), and that its thread reports
// a silent job once.
#include "launcher/attempt/stall_watch.h"

#include <gtest/gtest.h>

#include <atomic>

namespace podrun {
namespace {

using namespace std::chrono_literals;

TEST(StallWatchTest, SilentForTheLimitIsAStallAndOutputResetsIt) {
  const auto t0 = StallWatch::Clock::time_point() + 1000s;
  StallWatch watch(3s, t0);
  EXPECT_FALSE(watch.Check(t0 + 2999ms));
  EXPECT_EQ(watch.Check(t0 + 3s), 3s);
  watch.Output(t0 + 2s);  // a line at 2 s: the clock starts again
  EXPECT_FALSE(watch.Check(t0 + 4s));
  EXPECT_EQ(watch.Check(t0 + 7s), 5s);
  StallWatch off(0s, t0);  // stall_seconds: 0 watches nothing
  EXPECT_FALSE(off.Check(t0 + 100000s));
}

TEST(StallWatchTest, TimeTheLauncherWasStoppedIsNotSilence) {
  const auto t0 = StallWatch::Clock::time_point() + 1000s;
  StallWatch watch(3s, t0);
  watch.NotWatched(t0 + 1s, t0 + 26s);  // silent 1 s, then SIGSTOPped for 25 s
  EXPECT_FALSE(watch.Check(t0 + 26s));
  EXPECT_FALSE(watch.Check(t0 + 27s));
  EXPECT_EQ(watch.Check(t0 + 28s), 3s);  // 1 s before the stop, 2 s after it
  watch.Output(t0 + 30s);
  watch.NotWatched(t0 + 29s, t0 + 31s);  // never shifted past the end of the gap
  EXPECT_EQ(watch.Check(t0 + 34s), 3s);
}

TEST(StallWatchTest, ItsThreadReportsOnceAndStopsWithIt) {
  std::atomic<int> calls{0};
  {
    StallWatch watch(1s, StallWatch::Clock::now() - 2s, [&](std::chrono::seconds silent) {
      EXPECT_GE(silent, 1s);
      ++calls;
    });
    for (int i = 0; i < 100 && calls == 0; ++i) std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace podrun
