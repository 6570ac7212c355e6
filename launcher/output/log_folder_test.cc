// Unit tests of LogFolder (`podrun logs --fold`).
#include "launcher/output/log_folder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launcher/pod/worker_range.h"

namespace podrun {
namespace {

// Collects the folded output as "[w0-3] text" lines, stderr ones marked with "E".
class FolderTest : public ::testing::Test {
 protected:
  LogFolder Make(std::vector<int> workers, size_t max_held_bytes = 0) {
    return LogFolder(
        std::move(workers),
        [this](const std::vector<int>& ws, Stream stream, std::string_view text) {
          out_.push_back((stream == Stream::kStderr ? "E[w" : "[w") + FormatWorkerRange(ws) + "] " +
                         std::string(text));
        },
        max_held_bytes);
  }
  std::vector<std::string> out_;
};

using Lines = std::vector<std::string>;

TEST_F(FolderTest, IdenticalLinesOfAllWorkersFoldIntoOne) {
  LogFolder folder = Make({0, 1, 2, 3});
  for (int w = 0; w < 4; ++w) {
    folder.AddLine(w, Stream::kStdout, "same");
    folder.AddLine(w, Stream::kStdout, "I am " + std::to_string(w));
  }
  for (int w = 0; w < 4; ++w) folder.End(w);
  EXPECT_EQ((Lines{"[w0-3] same", "[w0] I am 0", "[w1] I am 1", "[w2] I am 2", "[w3] I am 3"}),
            out_);
  EXPECT_EQ(0u, folder.held_lines());
}

TEST_F(FolderTest, WaitsUntilEveryWorkerReachedTheLine) {
  LogFolder folder = Make({0, 2});
  folder.AddLine(0, Stream::kStdout, "a");
  folder.AddLine(0, Stream::kStdout, "b");
  EXPECT_TRUE(out_.empty());
  EXPECT_EQ(2u, folder.held_lines());
  folder.AddLine(2, Stream::kStdout, "a");
  EXPECT_EQ((Lines{"[w0,2] a"}), out_);
  folder.AddLine(2, Stream::kStdout, "c");
  EXPECT_EQ((Lines{"[w0,2] a", "[w0] b", "[w2] c"}), out_);
}

TEST_F(FolderTest, AWorkerThatEndedEarlyStopsFoldingButReleasesTheOthers) {
  LogFolder folder = Make({0, 1, 2});
  folder.AddLine(0, Stream::kStdout, "x");
  folder.AddLine(1, Stream::kStdout, "x");
  folder.AddLine(2, Stream::kStdout, "x");
  folder.AddLine(0, Stream::kStdout, "y");
  folder.AddLine(1, Stream::kStdout, "y");
  EXPECT_EQ((Lines{"[w0-2] x"}), out_);
  folder.End(2);  // w2 never prints "y": not all workers printed it
  EXPECT_EQ((Lines{"[w0-2] x", "[w0] y", "[w1] y"}), out_);
  folder.AddLine(1, Stream::kStdout, "z");
  EXPECT_EQ(3u, out_.size());  // w0 may still print line 3
  folder.End(0);
  EXPECT_EQ("[w1] z", out_.back());
}

TEST_F(FolderTest, StreamsFoldIndependently) {
  LogFolder folder = Make({0, 1});
  folder.AddLine(0, Stream::kStderr, "warning");
  folder.AddLine(0, Stream::kStdout, "out");
  folder.AddLine(1, Stream::kStdout, "out");
  folder.AddLine(1, Stream::kStderr, "warning");
  EXPECT_EQ((Lines{"[w0-1] out", "E[w0-1] warning"}), out_);
}

TEST_F(FolderTest, EmptyLinesFoldToo) {
  LogFolder folder = Make({0, 1});
  folder.AddLine(0, Stream::kStdout, "");
  folder.AddLine(1, Stream::kStdout, "");
  EXPECT_EQ((Lines{"[w0-1] "}), out_);
}

TEST_F(FolderTest, OneWorkerPrintsEveryLineAsItComes) {
  LogFolder folder = Make({5});
  folder.AddLine(5, Stream::kStdout, "hello");
  EXPECT_EQ((Lines{"[w5] hello"}), out_);
}

TEST_F(FolderTest, RejectsUnselectedOrEndedWorkers) {
  LogFolder folder = Make({0, 1});
  EXPECT_THROW(folder.AddLine(7, Stream::kStdout, "x"), std::invalid_argument);
  EXPECT_THROW(folder.End(7), std::invalid_argument);
  folder.End(1);
  EXPECT_THROW(folder.AddLine(1, Stream::kStdout, "x"), std::invalid_argument);
}

TEST_F(FolderTest, AllEndedWithNothingPrintsNothing) {
  LogFolder folder = Make({0, 1});
  folder.End(0);
  folder.End(1);
  EXPECT_TRUE(out_.empty());
}

TEST_F(FolderTest, BacklogIsBoundedPastItTheLaggardPrintsUnfolded) {
  // Room for about 3 held lines of 10 bytes (each costs its text and 64 bytes of bookkeeping).
  LogFolder folder = Make({0, 1, 2}, 3 * 74);
  for (int i = 1; i <= 5; ++i) {
    folder.AddLine(0, Stream::kStdout, "line " + std::to_string(i) + "____");
    folder.AddLine(1, Stream::kStdout, "line " + std::to_string(i) + "____");
  }
  // w2 prints nothing: past the bound, the oldest lines go out folded over w0-1.
  EXPECT_LE(folder.held_lines(), 3u);
  ASSERT_GE(out_.size(), 3u);
  EXPECT_EQ("[w0-1] line 1____", out_[0]);
  size_t printed = out_.size();
  folder.AddLine(2, Stream::kStdout, "line 1____");  // its partners were printed: unfolded
  ASSERT_EQ(printed + 1, out_.size());
  EXPECT_EQ("[w2] line 1____", out_.back());
  for (int i = 2; i <= 5; ++i)
    folder.AddLine(2, Stream::kStdout, "line " + std::to_string(i) + "____");
  folder.End(0);
  folder.End(1);
  folder.End(2);
  EXPECT_EQ(0u, folder.held_lines());
  // Every worker's 5 lines came out exactly once, folded or not.
  size_t total = 0;
  for (const std::string& l : out_)
    total += l.rfind("[w0-2]", 0) == 0 ? 3 : l.rfind("[w0-1]", 0) == 0 ? 2 : 1;
  EXPECT_EQ(15u, total);
  EXPECT_EQ("[w0-2] line 5____", out_.back());
}

}  // namespace
}  // namespace podrun
