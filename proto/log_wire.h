// The framing of `podrun-agent stream-log` (docs/design.md decision 3 and docs/decisions.md "Bulk
// logs over a channel of their own"): a job's log records, then how the job ended, written to
// the agent's stdout and read by the launcher from an SSH exec channel. SSH already checks the
// bytes, so frames carry no CRC: they are cheaper to make and to read than the on-disk records.
//
// Frame layout, little endian, 24-byte header then the payload:
//   0  u8 'P'   1 u8 'W'   2 u8 kind (0 stdout, 1 stderr record, 2 end, 3 heartbeat,
//   4 compressed batch)   3 u8 0   4  u32 payload length   8 u64 seq (records; else 0)
//   16 i64 time_ns (records; else 0)
// The end frame's payload is a serialized v1::LogBatch holding only `end` and `log_gap`. A
// compressed batch's payload is an LZ4 block holding complete record frames
// (proto/wire_compressor.h); stream-log sends them with --compress. A
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
// Appends the header of a compressed batch whose payload (size and LZ4 block) has `payload_size`
// bytes to `out`.
void AppendWireCompressedHeader(size_t payload_size, std::string* out);

// Reads frames from a byte stream fed in pieces of any size. Decodes at most about
// kMaxDecodedBytes of record data between two TakeRecords: the rest of what was fed is held
// undecoded (a compressed batch inflates up to kMaxCompressedBatchBytes, so a few MiB read at
// once could otherwise become gigabytes of records). Call Continue while HasUndecoded before
// feeding more.
class WireDecoder {
 public:
  static constexpr size_t kMaxDecodedBytes = 4u << 20;

  // Appends the bytes and decodes what the bound allows; throws std::runtime_error on a
  // malformed frame (the stream is not ours).
  void Feed(std::string_view bytes);
  // Decodes more of what is held, as far as the bound allows (after TakeRecords).
  void Continue();
  // True if a complete (or malformed: Continue throws) frame is held undecoded.
  bool HasUndecoded() const;
  // The complete records decoded so far, in order (moved out).
  std::vector<LogRecord> TakeRecords();
  // The end frame's payload, once it has come; nothing is read after it.
  const std::optional<std::string>& end() const { return end_; }
  // Bytes held undecoded (complete frames and an incomplete one).
  size_t pending() const {
    return held_.size() - held_at_ + (partial_ ? kWireHeaderBytes + partial_->data.size() : 0);
  }

 private:
  // The size of the frame whose header is at `h`; throws if it is not one of ours.
  static size_t CheckedFrameSize(const char* h);
  // Takes the complete frame at `h` into records_ or end_.
  void TakeFrame(const char* h);
  // Takes the record frames of a compressed batch; throws if it holds anything else.
  void TakeCompressed(std::string_view payload);
  // Decodes the complete frames at the start of `bytes` while the bound allows; returns the
  // bytes used.
  size_t DecodeFrom(std::string_view bytes);
  bool Full() const { return decoded_ >= kMaxDecodedBytes; }
  // Starts partial_ from the record frame header at `h` and its data so far.
  void StartPartial(const char* h, std::string_view data);
  // Appends what `bytes` holds of partial_'s data, removed from it; true once partial_ is whole
  // (then in records_).
  bool FillPartial(std::string_view* bytes);
  // Keeps what DecodeFrom left of fed bytes: an incomplete record frame as partial_, the rest
  // (an incomplete frame of another kind, or what the bound left) in held_.
  void Hold(std::string_view rest);

  // A record frame whose header has come and whose data is coming in later pieces (a frame
  // larger than a read): the data goes straight into the record, not into held_ to be copied
  // again. While it is set, held_ is empty.
  std::optional<LogRecord> partial_;
  size_t partial_length_ = 0;  // the data partial_ holds once whole
  std::string held_;           // bytes fed but not decoded yet, from held_at_ on
  size_t held_at_ = 0;
  size_t decoded_ = 0;  // record data decoded since the last TakeRecords
  std::vector<LogRecord> records_;
  std::optional<std::string> end_;
};

}  // namespace podrun
