// Tests of ApiOutage: transient gcloud failures waited out with a doubling backoff up to a limit,
// permanent ones rethrown at once, the clock a test's own.
#include "launcher/recovery/api_outage.h"

#include <gtest/gtest.h>

#include <vector>

namespace podrun {
namespace {

using namespace std::chrono_literals;

GcloudError Transient() {
  return GcloudError(ExitCode::kUnreachable, "tpu n: `gcloud ... describe` failed:\n503",
                     GcloudFailure::kTransient, "HTTP 503");
}

TEST(ApiOutageTest, BackoffDoublesFromOneSecondUpToAMinute) {
  EXPECT_EQ(ApiOutageBackoff(1), 1s);
  EXPECT_EQ(ApiOutageBackoff(2), 2s);
  EXPECT_EQ(ApiOutageBackoff(6), 32s);
  EXPECT_EQ(ApiOutageBackoff(7), 60s);
  EXPECT_EQ(ApiOutageBackoff(50), 60s);
}

TEST(ApiOutageTest, ATransientFailureIsTriedAgainAndSaidWithHowLongTheApiHasBeenOut) {
  auto now = std::chrono::steady_clock::time_point{};
  std::vector<std::chrono::seconds> waits;
  std::vector<std::string> said;
  ApiOutage outage(
      "the TPU API", 10min,
      [&](std::chrono::seconds s) {
        waits.push_back(s);
        now += s;
        return true;
      },
      [&](const std::string& what) { said.push_back(what); }, [&] { return now; });
  int tries = 0;
  const int answer = outage.Run([&] {
    if (++tries < 4) throw Transient();
    return 42;
  });
  EXPECT_EQ(42, answer);
  EXPECT_EQ(4, tries);
  ASSERT_EQ(3u, waits.size());
  EXPECT_LE(waits[0], waits[2]);  // backing off, jitter or not
  ASSERT_EQ(3u, said.size());
  EXPECT_EQ("the TPU API has not answered for 0s (HTTP 503), trying again", said[0]);
  EXPECT_NE(std::string::npos, said[2].find("has not answered for"));
  EXPECT_FALSE(outage.ongoing());
}

TEST(ApiOutageTest, APermanentFailureIsRethrownAtOnceAndAnOutageEndsAtItsLimit) {
  auto now = std::chrono::steady_clock::time_point{};
  int waits = 0;
  ApiOutage outage(
      "the Compute Engine API", 5min,
      [&](std::chrono::seconds s) {
        ++waits;
        now += s;
        return true;
      },
      {}, [&] { return now; });
  try {
    outage.Run([]() -> int {
      throw GcloudError(ExitCode::kUnreachable, "PERMISSION_DENIED: no", GcloudFailure::kFailed,
                        "PERMISSION_DENIED");
    });
    FAIL() << "no throw";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kFailed, e.failure());
  }
  EXPECT_EQ(0, waits);
  try {
    outage.Run([]() -> int { throw Transient(); });
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    EXPECT_NE(std::string::npos,
              std::string(e.what()).find("the Compute Engine API has not answered for"))
        << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find("503")) << e.what();
  }
  EXPECT_GT(waits, 4);
  EXPECT_GE(now - std::chrono::steady_clock::time_point{}, 5min);
}

TEST(ApiOutageTest, AGivenUpWaitIsAnInterruption) {
  ApiOutage outage("the TPU API", 10min, [](std::chrono::seconds) { return false; });
  try {
    outage.Run([]() -> int { throw Transient(); });
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kInterrupted, e.code());
  }
}

}  // namespace
}  // namespace podrun
