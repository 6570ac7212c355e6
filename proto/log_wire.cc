// See log_wire.h.
#include "proto/log_wire.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace podrun {
namespace {

constexpr uint8_t kKindStdout = 0, kKindStderr = 1, kKindEnd = 2, kKindHeartbeat = 3;

template <typename T>
void Put(char* at, T value) {
  std::memcpy(at, &value, sizeof value);  // the machines we run on are little endian
}

template <typename T>
T Get(const char* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

void AppendHeader(uint8_t kind, uint64_t seq, int64_t time_ns, size_t payload_size,
                  std::string* out) {
  char header[kWireHeaderBytes] = {'P', 'W', static_cast<char>(kind), 0};
  Put<uint32_t>(header + 4, static_cast<uint32_t>(payload_size));
  Put<uint64_t>(header + 8, seq);
  Put<int64_t>(header + 16, time_ns);
  out->append(header, sizeof header);
}

void AppendFrame(uint8_t kind, uint64_t seq, int64_t time_ns, std::string_view payload,
                 std::string* out) {
  AppendHeader(kind, seq, time_ns, payload.size(), out);
  out->append(payload);
}

uint8_t KindOf(const LogRecord& record) {
  return record.stream == LogStream::kStderr ? kKindStderr : kKindStdout;
}

}  // namespace

void AppendWireRecord(const LogRecord& record, std::string* out) {
  AppendFrame(KindOf(record), record.seq, record.time_ns, record.data, out);
}

void AppendWireRecordHeader(const LogRecord& record, std::string* out) {
  AppendHeader(KindOf(record), record.seq, record.time_ns, record.data.size(), out);
}

void AppendWireEnd(std::string_view payload, std::string* out) {
  AppendFrame(kKindEnd, 0, 0, payload, out);
}

size_t WireDecoder::CheckedFrameSize(const char* h) {
  const auto kind = static_cast<uint8_t>(h[2]);
  const auto length = Get<uint32_t>(h + 4);
  if (h[0] != 'P' || h[1] != 'W' || kind > kKindHeartbeat || h[3] != 0 ||
      length > kMaxLogRecordDataBytes) {
    throw std::runtime_error("malformed log stream (not a podrun-agent stream-log frame)");
  }
  return kWireHeaderBytes + length;
}

void AppendWireHeartbeat(std::string* out) { AppendFrame(kKindHeartbeat, 0, 0, {}, out); }

void WireDecoder::TakeFrame(const char* h) {
  const auto kind = static_cast<uint8_t>(h[2]);
  std::string_view payload(h + kWireHeaderBytes, Get<uint32_t>(h + 4));
  if (kind == kKindEnd) {
    end_.emplace(payload);
    return;
  }
  if (kind == kKindHeartbeat) return;
  LogRecord& r = records_.emplace_back();
  r.seq = Get<uint64_t>(h + 8);
  r.time_ns = Get<int64_t>(h + 16);
  r.stream = kind == kKindStderr ? LogStream::kStderr : LogStream::kStdout;
  r.data.assign(payload);
}

void WireDecoder::Feed(std::string_view bytes) {
  if (end_) return;
  auto move_to_buffer = [&](size_t want) {
    const size_t take = std::min(want - buffer_.size(), bytes.size());
    buffer_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    return buffer_.size() == want;
  };
  if (!buffer_.empty()) {  // complete the frame held from before: its header, then the rest
    if (!move_to_buffer(std::max(kWireHeaderBytes, buffer_.size()))) return;
    if (!move_to_buffer(CheckedFrameSize(buffer_.data()))) return;
    TakeFrame(buffer_.data());
    buffer_.clear();
  }
  // The frames wholly inside `bytes` are taken from it directly; only an incomplete tail is
  // copied aside.
  size_t at = 0;
  while (!end_ && bytes.size() - at >= kWireHeaderBytes) {
    const size_t size = CheckedFrameSize(bytes.data() + at);
    if (bytes.size() - at < size) break;
    TakeFrame(bytes.data() + at);
    at += size;
  }
  if (!end_) buffer_.assign(bytes.substr(at));
}

std::vector<LogRecord> WireDecoder::TakeRecords() {
  std::vector<LogRecord> out;
  out.swap(records_);
  return out;
}

}  // namespace podrun
