// Unit tests of BoundedCapture (what exec --json keeps).
#include "launcher/output/bounded_capture.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(BoundedCapture, SmallStreamKeptWhole) {
  BoundedCapture c(4, 4);
  c.Append("abc");
  c.Append("defgh");
  EXPECT_EQ("abcdefgh", c.text());
  EXPECT_EQ(0u, c.dropped_bytes());
}

TEST(BoundedCapture, KeepsHeadAndTailAndCountsTheRest) {
  BoundedCapture c(4, 4);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    std::string chunk = std::to_string(i) + ",";
    all += chunk;
    c.Append(chunk);
  }
  EXPECT_EQ(all.substr(0, 4) + all.substr(all.size() - 4), c.text());
  EXPECT_EQ(all.size() - 8, c.dropped_bytes());
  EXPECT_EQ(all.size(), c.total_bytes());
}

TEST(BoundedCapture, MemoryStaysBounded) {
  BoundedCapture c(1 << 10, 1 << 10);
  std::string chunk(700, 'q');
  for (int i = 0; i < 100000; ++i) c.Append(chunk);  // 70 MB
  EXPECT_EQ(2u << 10, c.text().size());
  EXPECT_EQ(70000000u - (2u << 10), c.dropped_bytes());
}

}  // namespace
}  // namespace podrun
