#include "launcher/pod/worker_range.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

TEST(WorkerRange, ParsesListsAndRanges) {
  EXPECT_EQ((std::vector<int>{0, 2, 3}), ParseWorkerRange("0,2-3", 4));
  EXPECT_EQ((std::vector<int>{2, 5, 6}), ParseWorkerRange("5-6,2", 8));
  EXPECT_EQ((std::vector<int>{1, 2}), ParseWorkerRange("1,1-2,2", 8));
}

TEST(WorkerRange, RejectsBadLists) {
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "0,,1", "8", "0-8"}) {
    EXPECT_THROW(ParseWorkerRange(bad, 8), Error) << bad;
  }
  try {
    ParseWorkerRange("0-9", 8);
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("worker 9 does not exist"));
  }
}

TEST(WorkerRange, FormatsCompactly) {
  EXPECT_EQ("0-3,5", FormatWorkerRange({0, 1, 2, 3, 5}));
  EXPECT_EQ("7", FormatWorkerRange({7}));
  EXPECT_EQ("0,2,4-5", FormatWorkerRange({0, 2, 4, 5}));
  EXPECT_EQ("", FormatWorkerRange({}));
}

}  // namespace
}  // namespace podrun
