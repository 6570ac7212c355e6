#include "launcher/output/time_format.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(TimeFormat, Rfc3339UtcKeepsTheMillisecondsAndSaysZ) {
  EXPECT_EQ("2026-11-28T10:59:13.342Z", FormatRfc3339Utc(1795863553342000000 + 999));
  EXPECT_EQ("1970-01-01T00:00:00.000Z", FormatRfc3339Utc(0));
}

}  // namespace
}  // namespace podrun
