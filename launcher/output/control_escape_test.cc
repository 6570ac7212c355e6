// Unit tests of EscapeControls.
#include "launcher/output/control_escape.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

std::string Escaped(std::string_view text) {
  std::string scratch;
  return std::string(EscapeControls(text, scratch));
}

TEST(EscapeControls, PlainTextUntouchedWithoutCopy) {
  std::string scratch;
  std::string_view text = "plain text, tabs\tand UTF-8 \xe2\x82\xac";
  std::string_view out = EscapeControls(text, scratch);
  EXPECT_EQ(text.data(), out.data());
  EXPECT_EQ(text, out);
}

TEST(EscapeControls, ColoursKept) {
  EXPECT_EQ("\x1b[1;31mred\x1b[0m \x1b[38:5:10mx\x1b[m",
            Escaped("\x1b[1;31mred\x1b[0m \x1b[38:5:10mx\x1b[m"));
}

TEST(EscapeControls, TitleClipboardAndCursorEscaped) {
  EXPECT_EQ("^[]0;pwned^G", Escaped("\x1b]0;pwned\x07"));
  EXPECT_EQ("^[]52;c;aGVsbG8=^[\\", Escaped("\x1b]52;c;aGVsbG8=\x1b\\"));
  EXPECT_EQ("^[[2J^[[H^[[1A", Escaped("\x1b[2J\x1b[H\x1b[1A"));
  EXPECT_EQ("a^Hb^?c^@", Escaped(std::string("a\bb\x7f"
                                             "c\0",
                                             6)));
  EXPECT_EQ("<U+009B>31m", Escaped("\xc2\x9b"
                                   "31m"));
  EXPECT_EQ("\xc2\xa9", Escaped("\xc2\xa9"));  // U+00A9 is text
}

}  // namespace
}  // namespace podrun
