#include "proto/log_wire.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace podrun {
namespace {

LogRecord Record(uint64_t seq, std::string data, LogStream stream = LogStream::kStdout) {
  LogRecord r;
  r.seq = seq;
  r.time_ns = 1'700'000'000'000'000'000 + static_cast<int64_t>(seq);
  r.stream = stream;
  r.data = std::move(data);
  return r;
}

TEST(LogWireTest, RecordsAndEndSurviveAnySplitOfTheStream) {
  std::vector<LogRecord> sent = {Record(1, "hello\n"), Record(2, "", LogStream::kStderr),
                                 Record(3, std::string(70000, 'x'))};
  std::string stream;
  for (const LogRecord& r : sent) {
    AppendWireRecord(r, &stream);
    AppendWireHeartbeat(&stream);  // skipped wherever it comes
  }
  AppendWireEnd("the end", &stream);
  stream += "ignored after the end";
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, stream.size()}) {
    WireDecoder decoder;
    std::vector<LogRecord> got;
    for (size_t at = 0; at < stream.size(); at += piece) {
      decoder.Feed(std::string_view(stream).substr(at, piece));
      for (LogRecord& r : decoder.TakeRecords()) got.push_back(std::move(r));
    }
    EXPECT_EQ(got, sent) << "piece " << piece;
    ASSERT_TRUE(decoder.end().has_value());
    EXPECT_EQ(*decoder.end(), "the end");
  }
}

TEST(LogWireTest, AnIncompleteFrameIsHeldNotDelivered) {
  std::string stream;
  AppendWireRecord(Record(1, "abc"), &stream);
  WireDecoder decoder;
  decoder.Feed(std::string_view(stream).substr(0, stream.size() - 1));
  EXPECT_TRUE(decoder.TakeRecords().empty());
  EXPECT_EQ(decoder.pending(), stream.size() - 1);
  decoder.Feed(std::string_view(stream).substr(stream.size() - 1));
  EXPECT_EQ(decoder.TakeRecords().size(), 1u);
  EXPECT_FALSE(decoder.end().has_value());
}

// Records larger than the pieces they come in (a holder's frames are 64 KiB, a supervisor's
// records 128 KiB) are built as their data comes, across the decoding bound, in order; the bytes
// held are accounted for at every step.
TEST(LogWireTest, RecordsLargerThanThePiecesComeWholeThroughTheBound) {
  std::vector<LogRecord> sent;
  std::string stream;
  for (uint64_t seq = 1; seq <= 60; ++seq) {
    // 128 KiB records, a few of a byte or empty, one of 3 MiB: about 10 MiB, past the bound twice.
    const size_t size = seq % 7 == 0 ? seq % 3 : seq == 30 ? size_t{3} << 20 : size_t{128} << 10;
    sent.push_back(Record(seq, std::string(size, static_cast<char>('a' + seq % 26)),
                          seq % 5 == 0 ? LogStream::kStderr : LogStream::kStdout));
    AppendWireRecord(sent.back(), &stream);
    if (seq % 11 == 0) AppendWireHeartbeat(&stream);
  }
  AppendWireEnd("done", &stream);
  for (size_t piece : {size_t{1000}, size_t{65536}, size_t{65536 + 24}, size_t{200000}}) {
    WireDecoder decoder;
    std::vector<LogRecord> got;
    size_t fed = 0, taken = 0;
    auto take = [&] {
      size_t data = 0;  // decoded between two takes: within the bound and one record
      for (LogRecord& r : decoder.TakeRecords()) {
        taken += kWireHeaderBytes + r.data.size();
        data += r.data.size();
        got.push_back(std::move(r));
      }
      EXPECT_LE(data, WireDecoder::kMaxDecodedBytes + (size_t{3} << 20)) << "piece " << piece;
    };
    for (size_t at = 0; at < stream.size() && !decoder.end(); at += piece) {
      const std::string_view now = std::string_view(stream).substr(at, piece);
      decoder.Feed(now);
      fed += now.size();
      take();
      while (decoder.HasUndecoded()) {
        decoder.Continue();
        take();
      }
      if (!decoder.end()) {  // heartbeats are consumed without a record
        EXPECT_LE(decoder.pending(), fed - taken) << "piece " << piece << " at " << at;
        EXPECT_LT(decoder.pending(), (size_t{3} << 20) + piece + kWireHeaderBytes);
      }
    }
    EXPECT_EQ(got, sent) << "piece " << piece;
    ASSERT_TRUE(decoder.end().has_value());
    EXPECT_EQ(*decoder.end(), "done");
  }
}

TEST(LogWireTest, AHeaderFollowedByTheDataIsTheWholeFrame) {
  const LogRecord r = Record(9, "some output\n", LogStream::kStderr);
  std::string whole, split;
  AppendWireRecord(r, &whole);
  AppendWireRecordHeader(r, &split);
  EXPECT_EQ(split.size(), kWireHeaderBytes);
  split += r.data;
  EXPECT_EQ(split, whole);
}

TEST(LogWireTest, ForeignBytesAreRefused) {
  WireDecoder decoder;
  EXPECT_THROW(decoder.Feed("bash: podrun-agent: command not found\n"), std::runtime_error);
}

}  // namespace
}  // namespace podrun
