// The on-disk framing of a job's log (docs/design.md decision 5): sequenced, timestamped output
// chunks, appended one write() per record, read back from any sequence number.
//
// Record layout, little endian, 32-byte header then the data:
//   0  u8  'P'        1  u8 'R'       2  u8 format version (1)   3  u8 stream (0 out, 1 err)
//   4  u32 data length                8  u64 seq                 16 i64 time_ns (wall clock)
//   24 u32 CRC-32 (zlib) of header bytes 0..23, the data, then the flags when not 0
//   28 u32 flags (LogRecordFlag; 0 in every record of an older podrun, whose CRC is unchanged)
// A record that is incomplete or fails its checks (a torn tail after a crash, or a write in
// progress) ends what a reader sees: it is "not yet written".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/unique_fd.h"

namespace podrun {

inline constexpr size_t kLogRecordHeaderBytes = 32;
inline constexpr uint32_t kMaxLogRecordDataBytes = 16u << 20;
// Default amount of record data returned by one LogReader::ReadSome (one LogBatch).
inline constexpr size_t kLogBatchBytes = 256u << 10;

enum class LogStream : uint8_t { kStdout = 0, kStderr = 1 };

// Bits of a record's flags word.
enum LogRecordFlag : uint32_t {
  // Written by podrun in place of records the disk refused (worker/jobdir/log_gap.h); its data is
  // for people. No output of a job can set it.
  kLogRecordGapMarker = 1u << 0,
};

struct LogRecord {
  uint64_t seq = 0;     // 1, 2, ... per job attempt
  int64_t time_ns = 0;  // wall clock, ns since the epoch
  LogStream stream = LogStream::kStdout;
  std::string data;    // at most kMaxLogRecordDataBytes
  uint32_t flags = 0;  // LogRecordFlag bits

  bool operator==(const LogRecord&) const = default;
};

// The record's bytes as stored: header followed by data.
std::string EncodeLogRecord(const LogRecord& record);

// Appends `record` to `fd` (opened with O_APPEND) in a single write() (continuing a short
// write, which only happens on a full disk). Throws std::system_error on failure and
// std::invalid_argument if the data is longer than kMaxLogRecordDataBytes.
void AppendRecord(int fd, const LogRecord& record);

// The complete, valid records at the start of `bytes` (records as EncodeLogRecord makes them,
// back to back), up to the first incomplete or invalid one.
std::vector<LogRecord> DecodeLogRecords(std::string_view bytes);

// The size (header and data) of the record whose header starts `bytes`, from the header alone
// (the data and its CRC are not checked); nullopt if `bytes` does not start with a valid header.
std::optional<size_t> LogRecordSizeAt(std::string_view bytes);

// Reads the records of one log file in order, starting at a sequence number. Keeps its byte
// offset, so calling ReadSome again after the file grew costs only the new records.
// Not thread-safe; one reader per follower.
class LogReader {
 public:
  // Reads `path` from the record with seq >= from_seq on. A file that does not exist yet
  // reads as empty until it appears.
  explicit LogReader(std::filesystem::path path, uint64_t from_seq = 1);

  // The next complete records, together holding about max_data_bytes of data (at least one
  // record when one is available). Empty when no new complete record is there (yet).
  // Throws std::system_error on I/O errors.
  std::vector<LogRecord> ReadSome(size_t max_data_bytes = kLogBatchBytes);

  // Sequence number of the last complete record passed (returned or skipped); 0 if none.
  uint64_t last_seq() const { return last_seq_; }
  // Byte offset of the next record in the file.
  uint64_t offset() const { return offset_; }

 private:
  bool OpenIfPresent();

  std::filesystem::path path_;
  UniqueFd fd_;
  uint64_t from_seq_;
  uint64_t offset_ = 0;
  uint64_t last_seq_ = 0;
};

// Sequence number of the last complete record in the file at `path` (0 if none or missing).
uint64_t LastSeqInLog(const std::filesystem::path& path);

}  // namespace podrun
