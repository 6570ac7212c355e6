// Tests of the launcher's copy of an attempt's log as a replaced driver resumes it: the copies
// as they were at any instant (here: copied files, as a SIGKILL would leave them) are cut back to
// the mark and resumed at its records, so that merged.log holds every line once, partial lines
// across the switch included.
#include "launcher/output/attempt_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace podrun {
namespace {

std::string Read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Worker w's records 1..n: "line K\n" cut across records at odd places, some on stderr.
std::vector<LogRecord> Records(int n) {
  std::string text;
  for (int k = 1; k <= n; ++k) text += "line " + std::to_string(k) + "\n";
  std::vector<LogRecord> records;
  for (size_t at = 0, seq = 1; at < text.size(); at += 7, ++seq) {
    records.push_back(
        {.seq = seq, .time_ns = 0, .stream = LogStream::kStdout, .data = text.substr(at, 7)});
  }
  return records;
}

class AttemptOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("podrun-attempt-output-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(AttemptOutputTest, AReplacedDriverResumesTheCopyWithEveryLineOnce) {
  const std::vector<LogRecord> all = Records(50);
  const std::filesystem::path first = dir_ / "first", second = dir_ / "second";
  for (size_t cut : {size_t{1}, all.size() / 3, all.size() / 2 + 1, all.size() - 1}) {
    SCOPED_TRACE(cut);
    std::filesystem::remove_all(dir_);
    {
      AttemptOutput output(first, /*color=*/false);
      for (int w : {0, 1}) {
        output.Add(w, {all.begin(), all.begin() + static_cast<long>(cut)});
      }
      // What a SIGKILL leaves at this instant: the files as they are (marked or not since).
      std::filesystem::copy(first, second);
    }
    AttemptOutput output(second, /*color=*/false);
    const std::map<int, uint64_t> from = output.Resume();
    for (int w : {0, 1}) {
      const uint64_t next = from.count(w) ? from.at(w) : 1;
      ASSERT_GE(next, 1u);
      ASSERT_LE(next, cut + 1);
      output.Add(w, {all.begin() + static_cast<long>(next - 1), all.end()});
      output.Finish(w);
    }
    std::string want;
    for (int k = 1; k <= 50; ++k) want += "[w0] line " + std::to_string(k) + "\n";
    std::string merged = Read(second / "merged.log");
    std::string w0;  // worker 0's lines, in order
    std::istringstream in(merged);
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("[w0] ")) w0 += line + "\n";
    }
    EXPECT_EQ(want, w0) << merged;
    std::string plain;
    for (int k = 1; k <= 50; ++k) plain += "line " + std::to_string(k) + "\n";
    EXPECT_EQ(plain, Read(second / "w1.log"));
  }
}

TEST_F(AttemptOutputTest, WithoutAMarkTheCopiesStartAfresh) {
  std::filesystem::create_directories(dir_);
  std::ofstream(dir_ / "merged.log") << "[w0] line 1\n";
  std::ofstream(dir_ / "w0.log") << "line 1\n";
  AttemptOutput output(dir_, /*color=*/false);
  EXPECT_TRUE(output.Resume().empty());
  EXPECT_EQ("", Read(dir_ / "merged.log"));
  EXPECT_EQ("", Read(dir_ / "w0.log"));
}

// After a machine's crash the mark may say more than the copies hold (it reached the disk, their
// last writes did not): cutting "back" to it would pad them with NUL bytes. Such a mark is
// dropped: the copies start afresh from record 1.
TEST_F(AttemptOutputTest, AMarkPastTheEndOfTheCopiesIsDropped) {
  const std::vector<LogRecord> all = Records(20);
  for (const char* lost : {"merged.log", "w1.log"}) {
    SCOPED_TRACE(lost);
    std::filesystem::remove_all(dir_);
    {
      AttemptOutput output(dir_, /*color=*/false);
      for (int w : {0, 1}) output.Add(w, all);
    }                                               // marked
    std::filesystem::resize_file(dir_ / lost, 10);  // the crash kept the first 10 bytes
    AttemptOutput output(dir_, /*color=*/false);
    const std::map<int, uint64_t> from = output.Resume();
    EXPECT_TRUE(from.empty());
    const std::string merged = Read(dir_ / "merged.log");
    EXPECT_EQ(std::string::npos, merged.find('\0'));
    EXPECT_EQ("", merged);
    EXPECT_EQ("", Read(dir_ / "w0.log"));
    EXPECT_EQ("", Read(dir_ / "w1.log"));
  }
}

}  // namespace
}  // namespace podrun
