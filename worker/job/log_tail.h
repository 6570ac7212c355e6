// LogTail: what `podrun top` needs of a job's log, read from its end only: how many records and
// output bytes it holds, when the last record came, and the last line printed. Reads at most
// kLogTailWindowBytes however long the log is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "proto/log_record.h"

namespace podrun::agent {

// How much of the log's end is read. A record holds at most one pipe read of the supervisor
// (64 KiB): the window always holds a whole record, so the last one is always found.
inline constexpr size_t kLogTailWindowBytes = 128u << 10;
// The longest last line reported; longer ones are cut (at a UTF-8 character boundary).
inline constexpr size_t kLastLineMaxBytes = 512;

struct LogTail {
  uint64_t last_seq = 0;       // the last complete record's sequence number (0: none)
  uint64_t output_bytes = 0;   // data bytes of records 1..last_seq (records are numbered densely)
  int64_t last_output_ns = 0;  // the last record's time (0: none)
  std::string last_line;       // see LastLine
};

// Reads the tail of the log at `path` (a missing file is an empty log). The first record in the
// window is found by its header: a position where a chain of valid records (CRC checked) starts
// and runs to the last complete record. Throws std::system_error on I/O errors.
LogTail ReadLogTail(const std::filesystem::path& path);

// The complete records at the end of `window`, the last `window.size()` bytes of a log: decoded
// from the first offset (`begin`) where records chain to a torn tail or to the window's end.
// No records if no offset does.
struct WindowRecords {
  size_t begin = 0;
  std::vector<LogRecord> records;
};
WindowRecords TailRecords(std::string_view window);

// The last non-empty line of output in `records` (in order): of the stream that wrote last
// (the other stream if that one has none), the last line with text; within it, the text after
// its last '\r' (a progress bar's latest state); surrounding whitespace removed; cut to
// kLastLineMaxBytes.
std::string LastLine(const std::vector<LogRecord>& records);

}  // namespace podrun::agent
