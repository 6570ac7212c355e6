// Tests of the log record framing: round trip, resume from a sequence number, torn tails.
#include "proto/log_record.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace podrun {
namespace {

class LogRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "logrec.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ / "log";
    fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd_.valid());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LogRecord Make(uint64_t seq, std::string data, LogStream stream = LogStream::kStdout) {
    return LogRecord{seq, static_cast<int64_t>(1'700'000'000'000'000'000LL + seq), stream,
                     std::move(data)};
  }

  std::vector<LogRecord> ReadAll(LogReader& reader) {
    std::vector<LogRecord> all;
    while (true) {
      auto some = reader.ReadSome();
      if (some.empty()) return all;
      for (auto& r : some) all.push_back(std::move(r));
    }
  }

  std::filesystem::path dir_;
  std::filesystem::path path_;
  UniqueFd fd_;
};

TEST_F(LogRecordTest, RoundTrip) {
  std::vector<LogRecord> written;
  for (uint64_t seq = 1; seq <= 100; ++seq) {
    written.push_back(Make(seq, "line " + std::to_string(seq) + "\n",
                           seq % 3 == 0 ? LogStream::kStderr : LogStream::kStdout));
    AppendRecord(fd_.get(), written.back());
  }
  AppendRecord(fd_.get(), Make(101, ""));  // empty data is a valid record
  written.push_back(Make(101, ""));
  LogReader reader(path_);
  EXPECT_EQ(ReadAll(reader), written);
  EXPECT_EQ(reader.last_seq(), 101u);
  EXPECT_EQ(LastSeqInLog(path_), 101u);
}

TEST_F(LogRecordTest, DecodesRecordsFromABuffer) {
  std::string bytes;
  std::vector<LogRecord> written;
  for (uint64_t seq = 7; seq <= 9; ++seq) {
    written.push_back(Make(seq, std::string(seq * 100, 'a' + static_cast<char>(seq))));
    bytes += EncodeLogRecord(written.back());
  }
  EXPECT_EQ(DecodeLogRecords(bytes), written);
  // A torn last record ends the decoding; a corrupt one too.
  EXPECT_EQ(DecodeLogRecords(bytes.substr(0, bytes.size() - 1)).size(), 2u);
  bytes[kLogRecordHeaderBytes + 3] ^= 1;
  EXPECT_TRUE(DecodeLogRecords(bytes).empty());
  EXPECT_TRUE(DecodeLogRecords("").empty());
}

// The flags word round-trips, is covered by the CRC when set, and a record without flags is
// byte for byte what an older podrun wrote (reserved word 0, CRC of header and data only).
TEST_F(LogRecordTest, FlagsRoundTripAreCheckedAndLeaveOldRecordsAsTheyWere) {
  LogRecord marker = Make(5, "podrun-agent: log gap: 2 chunk(s)", LogStream::kStderr);
  marker.flags = kLogRecordGapMarker;
  std::string bytes = EncodeLogRecord(marker);
  ASSERT_EQ(DecodeLogRecords(bytes).size(), 1u);
  EXPECT_EQ(DecodeLogRecords(bytes)[0], marker);
  EXPECT_EQ(kLogRecordGapMarker, DecodeLogRecords(bytes)[0].flags);
  AppendRecord(fd_.get(), marker);
  LogReader reader(path_);
  EXPECT_EQ(ReadAll(reader), std::vector<LogRecord>{marker});
  // The flag cannot be cleared (or set) without the CRC saying so.
  std::string cleared = bytes;
  cleared[28] = 0;
  EXPECT_TRUE(DecodeLogRecords(cleared).empty());
  const LogRecord plain = Make(6, "text");
  std::string old = EncodeLogRecord(plain);
  EXPECT_EQ(std::string(4, '\0'), old.substr(28, 4));
  old[28] = 1;  // a flag set on a record that was written without one
  EXPECT_TRUE(DecodeLogRecords(old).empty());
  EXPECT_EQ(0u, DecodeLogRecords(EncodeLogRecord(plain))[0].flags);
}

TEST_F(LogRecordTest, SizeOfARecordFromItsHeader) {
  const std::string bytes = EncodeLogRecord(Make(3, "hello\n")) + "tail";
  EXPECT_EQ(LogRecordSizeAt(bytes), kLogRecordHeaderBytes + 6);
  EXPECT_EQ(LogRecordSizeAt(bytes.substr(0, kLogRecordHeaderBytes)), kLogRecordHeaderBytes + 6);
  EXPECT_EQ(LogRecordSizeAt(bytes.substr(0, kLogRecordHeaderBytes - 1)), std::nullopt);
  EXPECT_EQ(LogRecordSizeAt(bytes.substr(1)), std::nullopt);  // not at a header
  EXPECT_EQ(LogRecordSizeAt("hello, world, this is plain text, not a record"), std::nullopt);
}

TEST_F(LogRecordTest, MissingFileReadsEmptyUntilItAppears) {
  LogReader reader(dir_ / "later");
  EXPECT_TRUE(reader.ReadSome().empty());
  UniqueFd fd(::open((dir_ / "later").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600));
  AppendRecord(fd.get(), Make(1, "x"));
  EXPECT_EQ(reader.ReadSome().size(), 1u);
  EXPECT_EQ(LastSeqInLog(dir_ / "nothing"), 0u);
}

TEST_F(LogRecordTest, ResumesFromSeqAndFollowsGrowth) {
  for (uint64_t seq = 1; seq <= 50; ++seq) AppendRecord(fd_.get(), Make(seq, std::to_string(seq)));
  LogReader reader(path_, 31);
  auto first = ReadAll(reader);
  ASSERT_EQ(first.size(), 20u);
  EXPECT_EQ(first.front().seq, 31u);
  EXPECT_EQ(first.back().data, "50");
  const uint64_t offset = reader.offset();
  EXPECT_TRUE(reader.ReadSome().empty());
  EXPECT_EQ(reader.offset(), offset);
  AppendRecord(fd_.get(), Make(51, "51"));
  auto next = reader.ReadSome();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].seq, 51u);
}

TEST_F(LogRecordTest, TornTailIsNotYetWritten) {
  AppendRecord(fd_.get(), Make(1, "complete"));
  const std::string second = EncodeLogRecord(Make(2, "torn record"));
  // A crash mid-write leaves a prefix of the record.
  ASSERT_EQ(::write(fd_.get(), second.data(), second.size() - 3),
            static_cast<ssize_t>(second.size() - 3));
  LogReader reader(path_);
  auto records = ReadAll(reader);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].data, "complete");
  EXPECT_EQ(LastSeqInLog(path_), 1u);
  // The rest arrives: the record becomes visible to the same reader.
  ASSERT_EQ(::write(fd_.get(), second.data() + second.size() - 3, 3), 3);
  records = reader.ReadSome();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].data, "torn record");
}

TEST_F(LogRecordTest, CorruptDataIsDetected) {
  std::string bytes = EncodeLogRecord(Make(1, "payload"));
  bytes[kLogRecordHeaderBytes + 2] ^= 0x40;
  ASSERT_EQ(::write(fd_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  LogReader reader(path_);
  EXPECT_TRUE(reader.ReadSome().empty());
  // Garbage that is not a header at all.
  UniqueFd fd(::open((dir_ / "zeros").c_str(), O_WRONLY | O_CREAT, 0600));
  std::string zeros(100, '\0');
  ASSERT_EQ(::write(fd.get(), zeros.data(), zeros.size()), 100);
  LogReader zero_reader(dir_ / "zeros");
  EXPECT_TRUE(zero_reader.ReadSome().empty());
}

TEST_F(LogRecordTest, LargeRecordsAndBatchLimit) {
  std::string big(5u << 20, 'a');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
  AppendRecord(fd_.get(), Make(1, big));
  for (uint64_t seq = 2; seq <= 40; ++seq)
    AppendRecord(fd_.get(), Make(seq, std::string(64 << 10, 'b')));
  LogReader reader(path_);
  auto first = reader.ReadSome();  // one record larger than a batch comes alone
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].data, big);
  auto second = reader.ReadSome();
  EXPECT_EQ(second.size(), kLogBatchBytes / (64 << 10));
  EXPECT_EQ(ReadAll(reader).size(), 39u - second.size());
  EXPECT_THROW(EncodeLogRecord(Make(1, std::string(kMaxLogRecordDataBytes + 1, 'x'))),
               std::invalid_argument);
}

}  // namespace
}  // namespace podrun
