// Tests of the supervisor's log writer on a disk that refuses writes (fault injection through
// its append function): nothing is silently lost, records stay in order, what is never written
// is replaced by one gap marker carrying the last replaced sequence number.
#include "worker/supervisor/log_writer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "worker/jobdir/log_gap.h"

namespace podrun::agent {
namespace {

class LogWriterTest : public ::testing::Test {
 protected:
  LogWriter writer_{[this](const LogRecord& r) {
                      if (full_) throw std::system_error(ENOSPC, std::generic_category(), "append");
                      disk_.push_back(r);
                    },
                    [this] { ++released_; }};
  std::vector<LogRecord> disk_;
  bool full_ = false;
  int released_ = 0;
};

std::vector<uint64_t> Seqs(const std::vector<LogRecord>& records) {
  std::vector<uint64_t> seqs;
  for (const auto& r : records) seqs.push_back(r.seq);
  return seqs;
}

TEST_F(LogWriterTest, WritesInOrderWhileTheDiskTakesIt) {
  writer_.Append(LogStream::kStdout, "a", 1);
  writer_.Append(LogStream::kStderr, "b", 2);
  ASSERT_EQ(disk_.size(), 2u);
  EXPECT_EQ(Seqs(disk_), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(disk_[1].stream, LogStream::kStderr);
  EXPECT_FALSE(writer_.holding());
  writer_.Finish(3);
  EXPECT_FALSE(writer_.gap());
  EXPECT_EQ(released_, 0);
}

TEST_F(LogWriterTest, HoldsWhatAFullDiskRefusesAndWritesItOnceThereIsRoom) {
  writer_.Append(LogStream::kStdout, "1", 1);
  full_ = true;
  writer_.Append(LogStream::kStdout, "2", 2);
  writer_.Append(LogStream::kStdout, "3", 3);
  EXPECT_TRUE(writer_.holding());
  EXPECT_EQ(Seqs(writer_.Held(1)), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(Seqs(writer_.Held(3)), (std::vector<uint64_t>{3}));
  full_ = false;
  writer_.Append(LogStream::kStdout, "4", 4);  // behind the held ones: held too
  EXPECT_EQ(Seqs(disk_), (std::vector<uint64_t>{1}));
  writer_.Retry(5);
  EXPECT_EQ(Seqs(disk_), (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_FALSE(writer_.holding());
  writer_.Finish(6);
  EXPECT_FALSE(writer_.gap() && writer_.gap()->chunks > 0);  // everything reached the disk
}

TEST_F(LogWriterTest, ADiskFullToTheEndStillKnowsItsGap) {
  writer_.Append(LogStream::kStdout, "1", 1);
  full_ = true;
  writer_.Append(LogStream::kStdout, "22", 2);
  writer_.Append(LogStream::kStderr, "333", 3);
  writer_.Finish(9);
  EXPECT_EQ(released_, 1);  // the reserve was given up to make room
  // Not even the marker fit: the gap is still known (for log_gap and the launcher), and the
  // records stay in memory for live readers.
  ASSERT_TRUE(writer_.gap());
  EXPECT_EQ(writer_.gap()->from_seq, 2u);
  EXPECT_EQ(writer_.gap()->chunks, 2u);
  EXPECT_EQ(writer_.gap()->bytes, 5u);
  EXPECT_EQ(writer_.gap()->cause, std::strerror(ENOSPC));
  EXPECT_EQ(Seqs(writer_.Held(2)), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(Seqs(disk_), (std::vector<uint64_t>{1}));
}

TEST_F(LogWriterTest, TheMarkerCarriesTheLastReplacedSequenceNumber) {
  writer_.Append(LogStream::kStdout, "1", 1);
  full_ = true;
  writer_.Append(LogStream::kStdout, "22", 2);
  writer_.Append(LogStream::kStdout, "333", 3);
  full_ = false;
  // The disk has room for the marker only: simulate by refusing records but not the marker.
  writer_ = LogWriter(
      [&](const LogRecord& r) {
        if (!IsGapMarker(r)) {
          throw std::system_error(ENOSPC, std::generic_category(), "append");
        }
        disk_.push_back(r);
      },
      [&] { ++released_; });
  writer_.Append(LogStream::kStdout, "a", 1);
  writer_.Append(LogStream::kStdout, "bb", 2);
  writer_.Finish(3);
  EXPECT_EQ(released_, 1);
  ASSERT_EQ(disk_.size(), 2u);  // the earlier writer's record 1, then the marker
  const LogRecord& marker = disk_.back();
  EXPECT_EQ(marker.seq, 2u);  // the last record it stands for
  EXPECT_EQ(marker.stream, LogStream::kStderr);
  EXPECT_TRUE(IsGapMarker(marker));
  // A job's own stderr saying the same words is output, not a marker.
  EXPECT_FALSE(IsGapMarker({7, 0, LogStream::kStderr, marker.data}));
  EXPECT_NE(marker.data.find("2 chunk(s), 3 bytes"), std::string::npos) << marker.data;
  EXPECT_NE(marker.data.find(std::strerror(ENOSPC)), std::string::npos) << marker.data;
  ASSERT_TRUE(writer_.gap());
  EXPECT_EQ(writer_.gap()->from_seq, 1u);
  EXPECT_EQ(writer_.gap()->chunks, 2u);
  EXPECT_EQ(writer_.gap()->bytes, 3u);
  // The replaced records are still served to live readers.
  EXPECT_EQ(Seqs(writer_.Held(1)), (std::vector<uint64_t>{1, 2}));
}

TEST_F(LogWriterTest, MemoryIsBoundedAndWhatIsDroppedIsMarked) {
  full_ = true;
  const std::string chunk(64 << 10, 'x');
  const size_t chunks = LogWriter::kMaxHeldBytes / chunk.size() + 10;
  for (size_t i = 0; i < chunks; ++i) writer_.Append(LogStream::kStdout, chunk, 1);
  EXPECT_LE(writer_.held_bytes(), LogWriter::kMaxHeldBytes);
  const auto held = writer_.Held(1);
  ASSERT_FALSE(held.empty());
  EXPECT_EQ(held.back().seq, chunks);
  const uint64_t first_held = held.front().seq;
  EXPECT_GT(first_held, 1u);  // the oldest went
  full_ = false;
  writer_.Retry(2);
  // A marker for the dropped ones (with the last dropped seq), then the held ones in order.
  ASSERT_EQ(disk_.size(), held.size() + 1);
  EXPECT_EQ(disk_[0].seq, first_held - 1);
  EXPECT_NE(disk_[0].data.find(std::to_string(first_held - 1) + " chunk(s)"), std::string::npos)
      << disk_[0].data;
  for (size_t i = 0; i < held.size(); ++i) EXPECT_EQ(disk_[i + 1].seq, first_held + i);
  ASSERT_TRUE(writer_.gap());
  EXPECT_EQ(writer_.gap()->chunks, first_held - 1);
}

TEST_F(LogWriterTest, WhileAReaderIsAttachedOnlyWhatItHadLeavesMemory) {
  full_ = true;
  writer_.HoldForReader(true);
  const std::string chunk(64 << 10, 'x');
  const uint64_t chunks = LogWriter::kMaxHeldBytes / chunk.size() + 10;
  for (uint64_t i = 0; i < chunks; ++i) writer_.Append(LogStream::kStdout, chunk, 1);
  // Past the bound, but nothing the reader has not had is dropped (the job is paused instead).
  EXPECT_EQ(Seqs(writer_.Held(1, 1)), (std::vector<uint64_t>{1}));
  EXPECT_EQ(writer_.held_bytes(), chunks * chunk.size());
  EXPECT_EQ(writer_.undelivered_bytes(), writer_.held_bytes());
  // The reader had the first 20: they make room, the rest stay.
  writer_.Delivered(20);
  EXPECT_EQ(writer_.undelivered_bytes(), (chunks - 20) * chunk.size());
  EXPECT_LE(writer_.held_bytes(), LogWriter::kMaxHeldBytes);
  const auto held = writer_.Held(1);
  ASSERT_FALSE(held.empty());
  EXPECT_LE(held.front().seq, 21u);
  EXPECT_EQ(held.back().seq, chunks);
  for (size_t i = 1; i < held.size(); ++i) EXPECT_EQ(held[i].seq, held[i - 1].seq + 1);
  // Everything delivered: any of it may go; more output keeps memory within the bound.
  writer_.Delivered(chunks);
  EXPECT_EQ(writer_.undelivered_bytes(), 0u);
  for (int i = 0; i < 30; ++i) writer_.Append(LogStream::kStdout, chunk, 2);
  EXPECT_LE(writer_.held_bytes(), LogWriter::kMaxHeldBytes);
  EXPECT_EQ(writer_.undelivered_bytes(), 30 * chunk.size());
  // At the end the gap counts every record that never reached the disk, delivered or not.
  writer_.Finish(3);
  ASSERT_TRUE(writer_.gap());
  EXPECT_EQ(writer_.gap()->chunks, chunks + 30);
  EXPECT_EQ(writer_.gap()->bytes, (chunks + 30) * chunk.size());
}

TEST_F(LogWriterTest, WithNoReaderTheOldestGoEvenIfNeverDelivered) {
  full_ = true;
  writer_.HoldForReader(true);
  const std::string chunk(64 << 10, 'x');
  const uint64_t chunks = LogWriter::kMaxHeldBytes / chunk.size() + 10;
  for (uint64_t i = 0; i < chunks; ++i) writer_.Append(LogStream::kStdout, chunk, 1);
  EXPECT_GT(writer_.held_bytes(), LogWriter::kMaxHeldBytes);
  writer_.HoldForReader(false);  // the reader went away
  EXPECT_LE(writer_.held_bytes(), LogWriter::kMaxHeldBytes);
  EXPECT_GT(writer_.Held(1).front().seq, 1u);
}

TEST_F(LogWriterTest, HeldServesABoundedContiguousSliceFromASequenceNumber) {
  full_ = true;
  const std::string chunk(1000, 'x');
  for (int i = 0; i < 100; ++i) writer_.Append(LogStream::kStdout, chunk, 1);
  EXPECT_EQ(Seqs(writer_.Held(40, 3000)), (std::vector<uint64_t>{40, 41, 42}));
  EXPECT_EQ(Seqs(writer_.Held(100, 1)), (std::vector<uint64_t>{100}));
  EXPECT_TRUE(writer_.Held(101).empty());
  EXPECT_EQ(writer_.Held(1).size(), 100u);
}

}  // namespace
}  // namespace podrun::agent
