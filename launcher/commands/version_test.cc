#include "launcher/commands/version.h"

#include <gtest/gtest.h>

#include <algorithm>

TEST(Version, IsSemanticVersion) {
  std::string_view v = podrun::Version();
  EXPECT_EQ(2, std::count(v.begin(), v.end(), '.')) << v;
}
