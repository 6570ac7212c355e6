#include "launcher/output/labelled_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace podrun {
namespace {

// Reads everything written so far to the read end of a pipe.
std::string Drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (n < static_cast<ssize_t>(sizeof buf)) break;
  }
  return out;
}

class LabelledOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, ::pipe(out_));
    ASSERT_EQ(0, ::pipe(err_));
  }
  void TearDown() override {
    for (int fd : {out_[0], out_[1], err_[0], err_[1]}) ::close(fd);
  }
  int out_[2];
  int err_[2];
};

TEST(LineSplitter, HoldsPartialLinesUntilNewline) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  s.Feed("a\nbc", collect);
  EXPECT_EQ((std::vector<std::string>{"a"}), lines);
  s.Feed("d\n\ne", collect);
  EXPECT_EQ((std::vector<std::string>{"a", "bcd", ""}), lines);
  EXPECT_TRUE(s.has_partial());
  s.Finish(collect);
  EXPECT_EQ((std::vector<std::string>{"a", "bcd", "", "e"}), lines);
  s.Finish(collect);
  EXPECT_EQ(4u, lines.size());
}

TEST_F(LabelledOutputTest, PrefixesEveryLineAndSeparatesStreams) {
  LabelledOutput o(out_[1], err_[1], /*color=*/false);
  o.Write(3, Stream::kStdout, "hello\nwor");
  o.Write(1, Stream::kStdout, "other\n");
  o.Write(3, Stream::kStdout, "ld\n");
  o.Write(3, Stream::kStderr, "oops\nlast");
  o.Finish(3);
  EXPECT_EQ("[w3] hello\n[w1] other\n[w3] world\n", Drain(out_[0]));
  EXPECT_EQ("[w3] oops\n[w3] last\n", Drain(err_[0]));
}

TEST_F(LabelledOutputTest, ColorAndNoPrefix) {
  LabelledOutput colored(out_[1], err_[1], /*color=*/true);
  colored.Write(0, Stream::kStdout, "x\n");
  std::string text = Drain(out_[0]);
  EXPECT_NE(std::string::npos, text.find("\x1b[")) << text;
  EXPECT_NE(std::string::npos, text.find("[w0]")) << text;
  LabelledOutput bare(out_[1], err_[1], /*color=*/false, /*prefix=*/false);
  bare.Write(0, Stream::kStdout, "y\n");
  EXPECT_EQ("y\n", Drain(out_[0]));
}

}  // namespace
}  // namespace podrun
