// Unit tests of ProgressThrottle with an injected clock.
#include "launcher/output/progress_throttle.h"

#include <gtest/gtest.h>

#include <vector>

namespace podrun {
namespace {

using namespace std::chrono_literals;

TEST(ProgressThrottle, FirstStateAtOnceThenAtMostOncePerIntervalLatestWins) {
  std::chrono::steady_clock::time_point now{};
  ProgressThrottle t(5s, [&] { return now; });
  std::vector<std::string> printed;
  auto print = [&](int w, std::string_view s) {
    printed.push_back(std::to_string(w) + std::string(s));
  };
  EXPECT_TRUE(t.Offer(0, "a"));
  now += 1s;
  EXPECT_FALSE(t.Offer(0, "b"));
  EXPECT_TRUE(t.Offer(1, "x"));  // per worker
  now += 1s;
  EXPECT_FALSE(t.Offer(0, "c"));
  t.TakeDue(print);
  EXPECT_TRUE(printed.empty());
  now += 3s;  // 5 s after "a"
  t.TakeDue(print);
  EXPECT_EQ((std::vector<std::string>{"0c"}), printed);
  t.TakeDue(print);
  EXPECT_EQ(1u, printed.size());
  now += 1s;
  EXPECT_FALSE(t.Offer(0, "d"));
  t.Drop(0);  // its line ended: "d" is stale
  now += 10s;
  t.TakeDue(print);
  EXPECT_EQ(1u, printed.size());
}

}  // namespace
}  // namespace podrun
