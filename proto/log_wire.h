// The framing of `podrun-agent stream-log` (DESIGN.md decision 3 and docs/decisions.md "Bulk
// logs over a channel of their own"): a job's log records, then how the job ended, written to
// the agent's stdout and read by the launcher from an SSH exec channel. SSH already checks the
// bytes, so frames carry no CRC: they are cheaper to make and to read than the on-disk records.
//
// Frame layout, little endian, 24-byte header then the payload:
//   0  u8 'P'   1 u8 'W'   2 u8 kind (0 stdout, 1 stderr record, 2 end, 3 heartbeat)   3 u8 0
//   4  u32 payload length   8 u64 seq (records; 0 for the end)   16 i64 time_ns (records)
// The end frame's payload is a serialized v1::LogBatch holding only `end` and `log_gap`. A
// heartbeat (no payload) is sent after kWireHeartbeatInterval without a frame, so that the
// reader can tell a quiet job from a dead link (kWireSilenceLimit).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/log_record.h"

namespace podrun {

inline constexpr size_t kWireHeaderBytes = 24;
// stream-log's exit code when it refuses (no such job on the worker): no retry can help.
inline constexpr int kStreamLogRefused = 3;
inline constexpr auto kWireHeartbeatInterval = std::chrono::seconds(3);
inline constexpr auto kWireSilenceLimit = std::chrono::seconds(15);
// Before stream-log's first frame: the worker's login shell may take a while to start it.
inline constexpr auto kWireStartLimit = std::chrono::seconds(60);

// Appends `record`'s frame to `out`.
void AppendWireRecord(const LogRecord& record, std::string* out);
// Appends the header of `record`'s frame to `out`: the frame is that followed by record.data
// (for a writer that sends the data from where it is, without copying it).
void AppendWireRecordHeader(const LogRecord& record, std::string* out);
// Appends the end frame with `payload` (a serialized LogBatch) to `out`.
void AppendWireEnd(std::string_view payload, std::string* out);
// Appends a heartbeat frame (the decoder skips it) to `out`.
void AppendWireHeartbeat(std::string* out);

// Reads frames from a byte stream fed in pieces of any size. Holds at most one incomplete frame.
class WireDecoder {
 public:
  // Appends the bytes; throws std::runtime_error on a malformed frame (the stream is not ours).
  void Feed(std::string_view bytes);
  // The complete records fed so far, in order (moved out).
  std::vector<LogRecord> TakeRecords();
  // The end frame's payload, once it has come; nothing is read after it.
  const std::optional<std::string>& end() const { return end_; }
  // Bytes of an incomplete frame held.
  size_t pending() const { return buffer_.size(); }

 private:
  // The size of the frame whose header is at `h`; throws if it is not one of ours.
  static size_t CheckedFrameSize(const char* h);
  // Takes the complete frame at `h` into records_ or end_.
  void TakeFrame(const char* h);

  std::string buffer_;  // an incomplete frame
  std::vector<LogRecord> records_;
  std::optional<std::string> end_;
};

}  // namespace podrun
