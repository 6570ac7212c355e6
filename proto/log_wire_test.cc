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
