#include "launcher/output/labelled_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

// Options for a test: a terminal or not, a clock the test moves.
LabelledOutputOptions Options(bool terminal, bool color = false, SteadyClockFn clock = nullptr) {
  LabelledOutputOptions options = LabelledOutput::MakeOptions(color, true);
  options.terminal = terminal;
  options.clock = std::move(clock);
  return options;
}

class LabelledOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, ::pipe2(out_, O_NONBLOCK));
    ASSERT_EQ(0, ::pipe2(err_, O_NONBLOCK));
    // Room for a whole 64 KiB line and its label; the writer's end blocks.
    for (int* p : {out_, err_}) {
      ASSERT_GT(::fcntl(p[1], F_SETPIPE_SZ, 1 << 20), 0);
      ::fcntl(p[1], F_SETFL, 0);
    }
  }
  void TearDown() override {
    for (int fd : {out_[0], out_[1], err_[0], err_[1]}) ::close(fd);
  }
  int out_[2];
  int err_[2];
};

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

TEST_F(LabelledOutputTest, ProgressRateLimitedOnTerminal) {
  std::chrono::steady_clock::time_point now{};
  LabelledOutput o(out_[1], err_[1], Options(true, false, [&] { return now; }));
  o.Write(2, Stream::kStdout, "\rstep 1\rstep 2");
  EXPECT_EQ("[w2] step 1\n", Drain(out_[0]));  // the first state at once
  now += std::chrono::milliseconds(100);
  o.Write(2, Stream::kStdout, "\rstep 3\rstep 4");
  o.Tick();
  EXPECT_EQ("", Drain(out_[0]));  // within 250 ms of the last one
  now += std::chrono::milliseconds(200);
  o.Tick();
  EXPECT_EQ("[w2] step 3\n", Drain(out_[0]));  // the latest complete state, when due
  now += std::chrono::seconds(1);
  o.Write(2, Stream::kStdout, "\rstep 5\n");
  EXPECT_EQ("[w2] step 4\n[w2] step 5\n", Drain(out_[0]));
}

TEST_F(LabelledOutputTest, ProgressEveryFiveSecondsIntoFileAndTee) {
  int tee[2];
  ASSERT_EQ(0, ::pipe2(tee, O_NONBLOCK));
  ::fcntl(tee[1], F_SETFL, 0);
  std::chrono::steady_clock::time_point now{};
  LabelledOutput o(out_[1], err_[1], Options(false, true, [&] { return now; }));
  o.Tee(tee[1]);
  for (int i = 1; i <= 30; ++i) {
    o.Write(0, Stream::kStdout, "\rstep " + std::to_string(i));
    o.Tick();
    now += std::chrono::milliseconds(300);  // 9 s in all
  }
  std::string file = Drain(out_[0]);
  // step 1 at 0.3 s, then the latest state once 5 s passed (step 19 ends step 18 at 5.4 s).
  EXPECT_NE(std::string::npos, file.find("step 1\n")) << file;
  EXPECT_NE(std::string::npos, file.find("step 18\n")) << file;
  EXPECT_EQ(2, std::count(file.begin(), file.end(), '\n')) << file;
  EXPECT_EQ("[w0] step 1\n[w0] step 18\n", Drain(tee[0]));  // plain labels in the copy
  o.Write(0, Stream::kStdout, "\n");
  EXPECT_NE(std::string::npos, Drain(out_[0]).find("step 30\n"));
  EXPECT_EQ("[w0] step 30\n", Drain(tee[0]));
  ::close(tee[0]);
  ::close(tee[1]);
}

TEST_F(LabelledOutputTest, ControlsEscapedOnTerminalOnly) {
  std::string line = "\x1b[32mok\x1b[0m \x1b]0;title\x07\n";
  LabelledOutput tty(out_[1], err_[1], Options(true));
  tty.Write(1, Stream::kStderr, line);
  EXPECT_EQ("[w1] \x1b[32mok\x1b[0m ^[]0;title^G\n", Drain(err_[0]));
  LabelledOutput pipe(out_[1], err_[1], Options(false));
  pipe.Write(1, Stream::kStderr, line);
  EXPECT_EQ("[w1] " + line, Drain(err_[0]));
}

TEST_F(LabelledOutputTest, LongLineWithoutNewlineIsPrintedInPieces) {
  LabelledOutput o(out_[1], err_[1], false);
  std::string text(LineSplitter::kMaxLineBytes + 10, 'x');
  std::string out;
  // Written in 1000-byte chunks, read as it comes (the pipe holds 64 KiB).
  for (size_t at = 0; at < text.size(); at += 1000) {
    o.Write(0, Stream::kStdout, text.substr(at, 1000));
    out += Drain(out_[0]);
  }
  EXPECT_EQ("[w0] " + text.substr(0, LineSplitter::kMaxLineBytes) + "\n", out);
  o.Finish(0);
  EXPECT_EQ("[w0] xxxxxxxxxx\n", Drain(out_[0]));
}

}  // namespace
}  // namespace podrun
