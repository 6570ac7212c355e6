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
  LogFolder Make(std::vector<int> workers) {
    return LogFolder(std::move(workers),
                     [this](const std::vector<int>& ws, Stream stream, std::string_view text) {
                       out_.push_back((stream == Stream::kStderr ? "E[w" : "[w") +
                                      FormatWorkerRange(ws) + "] " + std::string(text));
                     });
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

}  // namespace
}  // namespace podrun
