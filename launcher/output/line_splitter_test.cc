// Unit tests of LineSplitter: lines, the 64 KiB cut, '\r' progress states.
#include "launcher/output/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace podrun {
namespace {

constexpr size_t kMax = LineSplitter::kMaxLineBytes;

struct Collected {
  std::vector<std::string> lines;
  std::vector<std::string> states;
};

void Feed(LineSplitter& s, std::string_view data, Collected& c) {
  s.Feed(
      data, [&](std::string_view l) { c.lines.emplace_back(l); },
      [&](std::string_view p) { c.states.emplace_back(p); });
}

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

TEST(LineSplitter, LineOfExactlyMaxIsOneLine) {
  LineSplitter s;
  Collected c;
  Feed(s, std::string(kMax, 'x') + "\n", c);
  ASSERT_EQ(1u, c.lines.size());
  EXPECT_EQ(kMax, c.lines[0].size());
}

TEST(LineSplitter, LongLineIsCutIntoMaxPiecesNothingDropped) {
  LineSplitter s;
  Collected c;
  std::string text;
  for (size_t i = 0; i < 3 * kMax + 100; ++i) text += static_cast<char>('a' + i % 26);
  Feed(s, text, c);  // no newline yet: the whole pieces are out, the rest is held
  ASSERT_EQ(3u, c.lines.size());
  for (const auto& l : c.lines) EXPECT_EQ(kMax, l.size());
  Feed(s, "\n", c);
  ASSERT_EQ(4u, c.lines.size());
  EXPECT_EQ(100u, c.lines[3].size());
  std::string joined;
  for (const auto& l : c.lines) joined += l;
  EXPECT_EQ(text, joined);
}

TEST(LineSplitter, CutAcrossFeedCalls) {
  LineSplitter s;
  Collected c;
  std::string text(kMax + kMax / 2, 'y');
  text[7] = 'A';
  text[kMax] = 'B';  // first byte of the second piece
  // Fed in odd-sized chunks so that the cut falls inside one of them.
  for (size_t at = 0; at < text.size(); at += 1000) Feed(s, text.substr(at, 1000), c);
  ASSERT_EQ(1u, c.lines.size());
  EXPECT_EQ(text.substr(0, kMax), c.lines[0]);
  s.Finish([&](std::string_view l) { c.lines.emplace_back(l); });
  ASSERT_EQ(2u, c.lines.size());
  EXPECT_EQ(text.substr(kMax), c.lines[1]);
}

TEST(LineSplitter, CutDoesNotSplitUtf8) {
  LineSplitter s;
  Collected c;
  std::string text(kMax - 1, 'z');
  text += "\xe2\x82\xac";  // U+20AC, 3 bytes straddling the 64 KiB boundary
  text += "tail\n";
  Feed(s, text, c);
  ASSERT_EQ(2u, c.lines.size());
  EXPECT_EQ(kMax - 1, c.lines[0].size());
  EXPECT_EQ("\xe2\x82\xactail", c.lines[1]);
}

TEST(LineSplitter, CarriageReturnGivesProgressStatesThenFinalLine) {
  LineSplitter s;
  Collected c;
  Feed(s, "\rstep 1", c);
  Feed(s, "\rstep 2", c);
  EXPECT_EQ((std::vector<std::string>{"step 1"}), c.states);
  Feed(s, "\rstep 3\nnext\n", c);
  EXPECT_EQ((std::vector<std::string>{"step 1", "step 2"}), c.states);
  EXPECT_EQ((std::vector<std::string>{"step 3", "next"}), c.lines);
}

TEST(LineSplitter, TrailingCarriageReturnStyleAndCrlf) {
  LineSplitter s;
  Collected c;
  Feed(s, "10%\r", c);  // undecided: "\r\n" or a progress state
  EXPECT_TRUE(c.states.empty());
  Feed(s, "20%\r", c);
  Feed(s, "\n", c);  // "20%\r\n": a line end
  EXPECT_EQ((std::vector<std::string>{"10%"}), c.states);
  EXPECT_EQ((std::vector<std::string>{"20%"}), c.lines);
  Feed(s, "dos line\r\n\r\n", c);
  EXPECT_EQ((std::vector<std::string>{"20%", "dos line", ""}), c.lines);
  EXPECT_EQ(1u, c.states.size());
}

TEST(LineSplitter, FinalStateWithoutNewlineIsPrintedAtFinish) {
  LineSplitter s;
  Collected c;
  Feed(s, "a\rb\r", c);
  s.Finish([&](std::string_view l) { c.lines.emplace_back(l); });
  EXPECT_EQ((std::vector<std::string>{"a"}), c.states);
  EXPECT_EQ((std::vector<std::string>{"b"}), c.lines);
}

}  // namespace
}  // namespace podrun
