#include "launcher/output/live_progress.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(LiveProgressTest, CountsEachPhaseAndNamesWhoHoldsTheCurrentOneUp) {
  auto now = LiveProgress::Clock::now();
  LiveProgress progress(-1, /*terminal=*/false, [&] { return now; });
  progress.BeginPhase("agents", {0, 1, 2, 3});
  EXPECT_EQ(progress.Render(), "agents 0/4");
  progress.Done(2);
  progress.Done(0);
  progress.Done(0);  // twice: counted once
  EXPECT_EQ(progress.Render(), "agents 2/4");
  now += std::chrono::seconds(4);
  EXPECT_EQ(progress.Render(), "agents 2/4 \u00b7 waiting for w1, w3 (4 s)");
  progress.Done(1);
  progress.Done(3);
  progress.BeginPhase("prepare", {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(progress.Render(), "agents 4/4 \u00b7 prepare 0/8");
  now += std::chrono::seconds(3);
  EXPECT_EQ(progress.Render(),
            "agents 4/4 \u00b7 prepare 0/8 \u00b7 waiting for w0, w1, w2, w3, w4 and 3 more (3 s)");
}

TEST(LiveProgressTest, APhaseMayCarryADetail) {
  LiveProgress progress(-1, /*terminal=*/false);
  progress.BeginPhase("agents", {0, 1});
  progress.Done(0);
  progress.Done(1);
  progress.BeginPhase("sync", {0, 1});
  progress.SetDetail("12.0 MB");
  progress.Done(1);
  EXPECT_EQ(progress.Render(), "agents 2/2 \u00b7 sync 1/2 (12.0 MB)");
}

TEST(LiveProgressTest, NothingIsDrawnOffATerminal) {
  LiveProgress progress(-1, /*terminal=*/false);
  EXPECT_EQ(LiveProgress::ClearPrefix(), "");
  {
    LiveProgress drawing(-1, /*terminal=*/true);  // writes to fd -1 fail quietly
    EXPECT_EQ(LiveProgress::ClearPrefix(), "\r\x1b[K");
  }
  EXPECT_EQ(LiveProgress::ClearPrefix(), "");
}

}  // namespace
}  // namespace podrun
