#include "launcher/attempt/log_follower.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "launcher/base/error.h"

namespace podrun {
namespace {

using std::chrono::milliseconds;

LogFollowParams FastParams() {
  LogFollowParams p;
  p.job_id = "j";
  p.description = "w1 (test)";
  p.lost_after = milliseconds(300);
  p.reconnect_pause = milliseconds(10);
  p.healthy_stream = milliseconds(200);
  return p;
}

// The reconnect succeeds every time but the stream fails at once (an agent that lost the job):
// the worker must be given up after lost_after, not reconnected without end.
TEST(LogFollower, ReconnectsThatNeverProgressEnd) {
  int reconnects = 0;
  std::vector<std::string> said;
  LogFollowHooks hooks{[] { return std::shared_ptr<AgentClient>(); },
                       [&] {
                         ++reconnects;
                         return std::shared_ptr<AgentClient>();
                       },
                       [&](const std::string& m) { said.push_back(m); },
                       {}};
  const auto began = std::chrono::steady_clock::now();
  LogFollowResult r = FollowLog(FastParams(), hooks, [](std::vector<LogRecord>&&) { return true; });
  const auto took = std::chrono::steady_clock::now() - began;
  EXPECT_FALSE(r.end);
  EXPECT_NE(r.lost.find("gave no progress"), std::string::npos) << r.lost;
  EXPECT_NE(r.lost.find("not connected"), std::string::npos) << r.lost;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(5000));
  // One "connection lost" message for the whole outage, not one per attempt.
  int lost_messages = 0;
  for (const std::string& m : said)
    lost_messages += m.find("connection to the agent lost") != std::string::npos;
  EXPECT_EQ(lost_messages, 1);
  EXPECT_GE(reconnects, 1);
  EXPECT_EQ(r.next_seq, 1u);
}

TEST(LogFollower, ReconnectFailuresGiveUpWithTheLastError) {
  LogFollowHooks hooks{[] { return std::shared_ptr<AgentClient>(); },
                       []() -> std::shared_ptr<AgentClient> {
                         throw Error(ExitCode::kUnreachable, "ssh connect: No route to host");
                       },
                       [](const std::string&) {},
                       {}};
  LogFollowResult r = FollowLog(FastParams(), hooks, [](std::vector<LogRecord>&&) { return true; });
  EXPECT_NE(r.lost.find("No route to host"), std::string::npos) << r.lost;
}

TEST(LogFollower, StartsWhereAsked) {
  LogFollowParams p = FastParams();
  p.from_seq = 42;
  LogFollowHooks hooks{
      [] { return std::shared_ptr<AgentClient>(); },
      []() -> std::shared_ptr<AgentClient> { throw Error(ExitCode::kUnreachable, "down"); },
      [](const std::string&) {},
      {}};
  EXPECT_EQ(FollowLog(p, hooks, [](std::vector<LogRecord>&&) { return true; }).next_seq, 42u);
}

}  // namespace
}  // namespace podrun
