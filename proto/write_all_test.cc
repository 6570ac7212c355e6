#include "proto/write_all.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>
#include <vector>

namespace podrun {
namespace {

TEST(WriteAllTest, PiecesArriveWholeAndInOrderThroughShortWrites) {
  // More pieces than one writev takes (IOV_MAX), empty ones among them, through a pipe that
  // takes 64 KiB at a time: every byte once, in order.
  std::vector<std::string> owned;
  for (int i = 0; i < 3000; ++i)
    owned.push_back(i % 7 == 0 ? "" : std::string(i % 300, 'a' + i % 26));
  std::vector<std::string_view> pieces(owned.begin(), owned.end());
  std::string expected;
  for (const std::string& p : owned) expected += p;
  int fds[2];
  ASSERT_EQ(0, ::pipe(fds));
  std::string got;
  std::thread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
      got.append(buf, static_cast<size_t>(n));
  });
  EXPECT_TRUE(WriteAllOf(fds[1], pieces));
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  EXPECT_EQ(expected.size(), got.size());
  EXPECT_TRUE(expected == got);
}

TEST(WriteAllTest, AClosedReaderIsAnError) {
  int fds[2];
  ASSERT_EQ(0, ::pipe(fds));
  ::close(fds[0]);
  const std::string piece = "x";
  const std::string_view pieces[] = {piece};
  signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(WriteAllOf(fds[1], pieces));
  ::close(fds[1]);
}

}  // namespace
}  // namespace podrun
