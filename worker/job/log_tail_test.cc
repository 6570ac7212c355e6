// Tests of reading a log's tail: the first whole record in a window that starts mid-record (also
// when the output imitates record headers), torn tails, the totals of a log longer than the
// window, and the last line of output.
#include "worker/job/log_tail.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

LogRecord Out(uint64_t seq, std::string data, LogStream stream = LogStream::kStdout) {
  return {seq, 1'700'000'000'000'000'000LL + static_cast<int64_t>(seq), stream, std::move(data)};
}

std::string Encode(const std::vector<LogRecord>& records) {
  std::string bytes;
  for (const LogRecord& r : records) bytes += EncodeLogRecord(r);
  return bytes;
}

TEST(LogTailTest, FindsTheFirstWholeRecordOfAWindow) {
  const std::vector<LogRecord> records = {Out(1, std::string(300, 'a')), Out(2, "two\n"),
                                          Out(3, "three\n", LogStream::kStderr)};
  const std::string bytes = Encode(records);
  // From the middle of record 1: records 2 and 3.
  WindowRecords tail = TailRecords(std::string_view(bytes).substr(100));
  ASSERT_EQ(tail.records.size(), 2u);
  EXPECT_EQ(tail.records[0], records[1]);
  EXPECT_EQ(tail.records[1], records[2]);
  EXPECT_EQ(tail.begin, bytes.size() - 100 - EncodeLogRecord(records[1]).size() -
                            EncodeLogRecord(records[2]).size());
  // The whole log, and a torn last record.
  EXPECT_EQ(TailRecords(bytes).records, records);
  EXPECT_EQ(TailRecords(bytes.substr(0, bytes.size() - 3)).records.size(), 2u);
  EXPECT_EQ(TailRecords(bytes.substr(0, bytes.size() - 18)).records.size(), 2u);  // torn header
  EXPECT_TRUE(TailRecords("").records.empty());
  EXPECT_TRUE(TailRecords(std::string(1000, 'x')).records.empty());
}

TEST(LogTailTest, OutputThatImitatesARecordIsNotTakenForOne) {
  // Record 1's data holds a whole encoded record: a window from inside record 1 sees it first,
  // but its chain does not end where the window does.
  const std::string fake = EncodeLogRecord(Out(99, "fake\n"));
  const std::vector<LogRecord> records = {Out(1, "xx" + fake + "yy"), Out(2, "real\n")};
  const std::string bytes = Encode(records);
  const WindowRecords tail = TailRecords(std::string_view(bytes).substr(10));
  ASSERT_EQ(tail.records.size(), 1u);
  EXPECT_EQ(tail.records[0], records[1]);
}

TEST(LogTailTest, LastLine) {
  EXPECT_EQ(LastLine({}), "");
  EXPECT_EQ(LastLine({Out(1, "first\nsecond\n")}), "second");
  EXPECT_EQ(LastLine({Out(1, "first\nsec"), Out(2, "ond  \n\n\n")}), "second");
  EXPECT_EQ(LastLine({Out(1, "epoch 1\n 10%\r 50%\r")}), "50%");  // a progress bar's latest
  EXPECT_EQ(LastLine({Out(1, "out\n"), Out(2, "warn\n", LogStream::kStderr)}), "warn");
  // The stream that wrote last has only blank lines: the other one's.
  EXPECT_EQ(LastLine({Out(1, "out\n"), Out(2, "\n \n", LogStream::kStderr)}), "out");
  // Long lines are cut at a character boundary ("é" is two bytes).
  std::string accents;
  for (size_t i = 0; i < kLastLineMaxBytes; ++i) accents += "\xc3\xa9";
  const std::string cut = LastLine({Out(1, accents + "\n")});
  EXPECT_EQ(cut.size(), kLastLineMaxBytes);
  EXPECT_EQ(cut, accents.substr(0, kLastLineMaxBytes));
  EXPECT_EQ(LastLine({Out(1, "x" + accents)}).size(), kLastLineMaxBytes - 1);
}

class LogTailFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "logtail.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(LogTailFileTest, TotalsOfALogLongerThanTheWindow) {
  EXPECT_EQ(ReadLogTail(dir_ / "missing").last_seq, 0u);
  const auto path = dir_ / "log";
  const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  uint64_t data_bytes = 0;
  uint64_t seq = 0;
  while (data_bytes < 4 * kLogTailWindowBytes) {
    ++seq;
    const std::string line = "line " + std::to_string(seq) + " " + std::string(seq % 97, '.');
    AppendRecord(fd.get(), Out(seq, line + "\n"));
    data_bytes += line.size() + 1;
  }
  AppendRecord(fd.get(), Out(++seq, "a progress bar\r", LogStream::kStderr));
  data_bytes += 15;
  // A record being written: not there yet.
  const std::string torn = EncodeLogRecord(Out(seq + 1, "not yet"));
  ASSERT_EQ(::write(fd.get(), torn.data(), 20), 20);

  const LogTail tail = ReadLogTail(path);
  EXPECT_EQ(tail.last_seq, seq);
  EXPECT_EQ(tail.output_bytes, data_bytes);
  EXPECT_EQ(tail.last_output_ns, Out(seq, "").time_ns);
  EXPECT_EQ(tail.last_line, "a progress bar");
}

TEST_F(LogTailFileTest, ALastRecordAsLargeAsAPipeRead) {
  const auto path = dir_ / "log";
  const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  ASSERT_TRUE(fd.valid());
  AppendRecord(fd.get(), Out(1, std::string(100000, 'z')));
  AppendRecord(fd.get(), Out(2, std::string(64u << 10, 'y') + "\nlast\n"));
  const LogTail tail = ReadLogTail(path);
  EXPECT_EQ(tail.last_seq, 2u);
  EXPECT_EQ(tail.output_bytes, 100000u + (64u << 10) + 6);
  EXPECT_EQ(tail.last_line, "last");
}

}  // namespace
}  // namespace podrun::agent
