// Tests of the launcher's copy mark: it reads back what it wrote, partial lines' bytes as they
// are, and refuses anything else.
#include "launcher/output/copy_mark.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(CopyMarkTest, ReadsBackWhatItWrote) {
  CopyMark mark;
  mark.merged_size = 12345;
  mark.workers[0] = {.next_seq = 17, .copy_size = 900, .out = {}, .err = {}};
  mark.workers[3] = {
      .next_seq = 2,
      .copy_size = 5,
      .out = {.partial = std::string("half a line \n\0 w", 16),
              .last_state = " 50%",
              .had_progress = true,
              .cr_pending = false},
      .err = {.partial = "x", .last_state = "", .had_progress = false, .cr_pending = true}};
  const std::string text = FormatCopyMark(mark);
  const std::optional<CopyMark> back = ParseCopyMark(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(mark, *back);
  EXPECT_EQ(CopyMark{}, ParseCopyMark(FormatCopyMark(CopyMark{})));
}

TEST(CopyMarkTest, RefusesATruncatedOrForeignFile) {
  CopyMark mark;
  mark.workers[1] = {
      .next_seq = 4,
      .copy_size = 10,
      .out = {.partial = "abc", .last_state = "", .had_progress = false, .cr_pending = false},
      .err = {}};
  const std::string text = FormatCopyMark(mark);
  EXPECT_FALSE(ParseCopyMark(text.substr(0, text.size() - 1)));
  EXPECT_FALSE(ParseCopyMark(text + "x"));
  EXPECT_FALSE(ParseCopyMark(""));
  EXPECT_FALSE(ParseCopyMark("podrun-copy-mark 2\nmerged 0\ndata\n"));
  EXPECT_FALSE(ParseCopyMark("podrun-copy-mark 1\nmerged 0\nw 1 0 0 0 0 0 0 0 0 0 0\ndata\n"));
  EXPECT_TRUE(ParseCopyMark("podrun-copy-mark 1\nmerged 0\nw 1 1 0 0 0 0 0 0 0 0 0\ndata\n"));
}

}  // namespace
}  // namespace podrun
