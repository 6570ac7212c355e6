#include "proto/wire_compressor.h"

#include <gtest/gtest.h>
#include <lz4.h>

#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include "proto/log_wire.h"

namespace podrun {
namespace {

LogRecord Record(uint64_t seq, std::string data) {
  LogRecord r;
  r.seq = seq;
  r.time_ns = 1'700'000'000'000'000'000 + static_cast<int64_t>(seq);
  r.stream = seq % 2 ? LogStream::kStdout : LogStream::kStderr;
  r.data = std::move(data);
  return r;
}

std::string Frames(const std::vector<LogRecord>& records) {
  std::string out;
  for (const LogRecord& r : records) AppendWireRecord(r, &out);
  return out;
}

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

TEST(WireCompressorTest, ACompressedBatchDecodesToTheSameRecordsInAnySplit) {
  std::vector<LogRecord> sent;
  for (uint64_t i = 1; i <= 200; ++i)
    sent.push_back(Record(i, "step " + std::to_string(i) + " loss 0.25\n"));
  const std::string frames = Frames(sent);
  WireCompressor compressor;
  const std::vector<std::string_view> pieces = {frames};
  std::optional<std::string_view> batch = compressor.Compress(pieces);
  ASSERT_TRUE(batch.has_value());
  EXPECT_LT(batch->size(), frames.size() / 2);
  std::string stream(*batch);
  AppendWireEnd("the end", &stream);
  for (size_t piece : {size_t{1}, size_t{13}, stream.size()}) {
    WireDecoder decoder;
    std::vector<LogRecord> got;
    for (size_t at = 0; at < stream.size(); at += piece) {
      decoder.Feed(std::string_view(stream).substr(at, piece));
      for (LogRecord& r : decoder.TakeRecords()) got.push_back(std::move(r));
    }
    EXPECT_EQ(got, sent) << "piece " << piece;
    EXPECT_EQ(decoder.end(), "the end");
  }
}

TEST(WireCompressorTest, PiecesCompressAsTheirConcatenation) {
  const std::vector<LogRecord> sent = {Record(1, std::string(5000, 'a')), Record(2, "b\n")};
  std::string headers;
  for (const LogRecord& r : sent) AppendWireRecordHeader(r, &headers);
  const std::vector<std::string_view> pieces = {
      std::string_view(headers).substr(0, kWireHeaderBytes), sent[0].data,
      std::string_view(headers).substr(kWireHeaderBytes), sent[1].data};
  WireCompressor compressor;
  std::optional<std::string_view> batch = compressor.Compress(pieces);
  ASSERT_TRUE(batch.has_value());
  WireDecoder decoder;
  decoder.Feed(*batch);
  EXPECT_EQ(decoder.TakeRecords(), sent);
}

TEST(WireCompressorTest, SmallOrIncompressibleBatchesAreSentAsTheyAre) {
  WireCompressor compressor;
  const std::string small = Frames({Record(1, "hi\n")});
  EXPECT_FALSE(compressor.Compress(std::vector<std::string_view>{small}).has_value());
  const std::string random = Frames({Record(2, RandomBytes(64 << 10, 1))});
  EXPECT_FALSE(compressor.Compress(std::vector<std::string_view>{random}).has_value());
  // After a miss, even a compressible batch is not tried for a while; then it is again.
  const std::string text = Frames({Record(3, std::string(64 << 10, 'x'))});
  int tried_again_after = -1;
  for (int i = 0; i < 40 && tried_again_after < 0; ++i) {
    if (compressor.Compress(std::vector<std::string_view>{text})) tried_again_after = i;
  }
  EXPECT_GT(tried_again_after, 0);
  EXPECT_LT(tried_again_after, 40);
}

// A compressed batch made by hand: `claimed` as its content size (default: the real one).
TEST(WireCompressorTest, ADecoderInflatesAtMostItsBoundBetweenTakes) {
  // 64 batches of 1 MiB of one repeated line each: a few KiB on the wire, 64 MiB inflated.
  std::string wire;
  WireCompressor compressor;
  uint64_t seq = 0;
  for (int b = 0; b < 64; ++b) {
    std::vector<LogRecord> batch;
    for (int i = 0; i < 16; ++i) batch.push_back(Record(++seq, std::string(64 << 10, 'y')));
    const std::string frames = Frames(batch);
    std::optional<std::string_view> c = compressor.Compress(std::vector<std::string_view>{frames});
    ASSERT_TRUE(c.has_value());
    wire.append(*c);
  }
  ASSERT_LT(wire.size(), 1u << 20);
  WireDecoder decoder;
  decoder.Feed(wire);  // all of it at once, as one read from the channel would be
  uint64_t next = 1;
  size_t rounds = 0;
  while (true) {
    size_t bytes = 0;
    for (const LogRecord& r : decoder.TakeRecords()) {
      EXPECT_EQ(r.seq, next++);
      bytes += r.data.size();
    }
    EXPECT_LE(bytes, WireDecoder::kMaxDecodedBytes + kMaxCompressedBatchBytes);
    ++rounds;
    if (!decoder.HasUndecoded()) break;
    decoder.Continue();
  }
  EXPECT_EQ(next, seq + 1);
  EXPECT_GE(rounds, 64u * (1u << 20) / (WireDecoder::kMaxDecodedBytes + kMaxCompressedBatchBytes));
  EXPECT_EQ(decoder.pending(), 0u);
}

std::string CompressedFrame(std::string_view content, std::optional<uint32_t> claimed = {}) {
  const auto n = static_cast<int>(content.size());
  std::string payload(4 + static_cast<size_t>(LZ4_compressBound(n)), '\0');
  const uint32_t size = claimed.value_or(static_cast<uint32_t>(content.size()));
  std::memcpy(payload.data(), &size, 4);
  payload.resize(4 + static_cast<size_t>(LZ4_compress_default(content.data(), payload.data() + 4, n,
                                                              LZ4_compressBound(n))));
  std::string frame;
  AppendWireCompressedHeader(payload.size(), &frame);
  return frame + payload;
}

TEST(WireCompressorTest, TheReaderRefusesBombsAndForeignContent) {
  // More than kMaxCompressedBatchBytes once inflated: refused before inflating.
  EXPECT_THROW(WireDecoder().Feed(CompressedFrame(std::string(kMaxCompressedBatchBytes + 1, 'x'))),
               std::runtime_error);
  // A content size that is not what the block holds.
  const std::string records = Frames({Record(1, std::string(1000, 'r'))});
  EXPECT_THROW(WireDecoder().Feed(CompressedFrame(records, records.size() + 1)),
               std::runtime_error);
  EXPECT_THROW(WireDecoder().Feed(CompressedFrame(records, records.size() - 1)),
               std::runtime_error);
  // An end frame inside a compressed batch, a torn frame, bytes that are not LZ4.
  std::string end;
  AppendWireEnd("x", &end);
  EXPECT_THROW(WireDecoder().Feed(CompressedFrame(end)), std::runtime_error);
  const std::string frames = Frames({Record(1, "abc\n")});
  EXPECT_THROW(WireDecoder().Feed(CompressedFrame(frames.substr(0, frames.size() - 1))),
               std::runtime_error);
  std::string junk;
  AppendWireCompressedHeader(16, &junk);
  junk += std::string(16, 'j');
  EXPECT_THROW(WireDecoder().Feed(junk), std::runtime_error);
}

}  // namespace
}  // namespace podrun
