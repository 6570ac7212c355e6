// See log_wire.h.
#include "proto/log_wire.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "proto/wire_compressor.h"

namespace podrun {
namespace {

constexpr uint8_t kKindStdout = 0, kKindStderr = 1, kKindEnd = 2, kKindHeartbeat = 3,
                  kKindCompressed = 4;

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

// True if the frame whose header is at `h` carries a record (its data becomes the record's).
bool IsRecordFrame(const char* h) {
  return static_cast<uint8_t>(h[2]) == kKindStdout || static_cast<uint8_t>(h[2]) == kKindStderr;
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
  if (h[0] != 'P' || h[1] != 'W' || kind > kKindCompressed || h[3] != 0 ||
      length > kMaxLogRecordDataBytes) {
    throw std::runtime_error("malformed log stream (not a podrun-agent stream-log frame)");
  }
  return kWireHeaderBytes + length;
}

void AppendWireHeartbeat(std::string* out) { AppendFrame(kKindHeartbeat, 0, 0, {}, out); }

void AppendWireCompressedHeader(size_t payload_size, std::string* out) {
  AppendHeader(kKindCompressed, 0, 0, payload_size, out);
}

void WireDecoder::TakeCompressed(std::string_view payload) {
  const std::string_view content = DecompressWireBatch(payload);
  size_t at = 0;
  while (at < content.size()) {
    const char* h = content.data() + at;
    const size_t size = content.size() - at < kWireHeaderBytes ? SIZE_MAX : CheckedFrameSize(h);
    if (size > content.size() - at || (h[2] != kKindStdout && h[2] != kKindStderr)) {
      throw std::runtime_error("malformed log stream (a compressed batch holds more than records)");
    }
    TakeFrame(h);
    at += size;
  }
}

void WireDecoder::TakeFrame(const char* h) {
  const auto kind = static_cast<uint8_t>(h[2]);
  std::string_view payload(h + kWireHeaderBytes, Get<uint32_t>(h + 4));
  if (kind == kKindEnd) {
    end_.emplace(payload);
    return;
  }
  if (kind == kKindHeartbeat) return;
  if (kind == kKindCompressed) {
    TakeCompressed(payload);
    return;
  }
  LogRecord& r = records_.emplace_back();
  r.seq = Get<uint64_t>(h + 8);
  r.time_ns = Get<int64_t>(h + 16);
  r.stream = kind == kKindStderr ? LogStream::kStderr : LogStream::kStdout;
  r.data.assign(payload);
  decoded_ += payload.size();
}

size_t WireDecoder::DecodeFrom(std::string_view bytes) {
  size_t at = 0;
  while (!end_ && !Full() && bytes.size() - at >= kWireHeaderBytes) {
    const size_t size = CheckedFrameSize(bytes.data() + at);
    if (bytes.size() - at < size) break;
    TakeFrame(bytes.data() + at);
    at += size;
  }
  return at;
}

void WireDecoder::StartPartial(const char* h, std::string_view data) {
  partial_.emplace();
  partial_->seq = Get<uint64_t>(h + 8);
  partial_->time_ns = Get<int64_t>(h + 16);
  partial_->stream = h[2] == kKindStderr ? LogStream::kStderr : LogStream::kStdout;
  partial_length_ = Get<uint32_t>(h + 4);
  // Reserved for what a supervisor's record holds, not for what the header claims: the bytes
  // have to come before the memory is taken.
  partial_->data.reserve(std::min<size_t>(partial_length_, size_t{256} << 10));
  partial_->data.append(data);
}

bool WireDecoder::FillPartial(std::string_view* bytes) {
  const size_t take = std::min(partial_length_ - partial_->data.size(), bytes->size());
  partial_->data.append(bytes->substr(0, take));
  bytes->remove_prefix(take);
  if (partial_->data.size() < partial_length_) return false;
  decoded_ += partial_length_;
  records_.push_back(std::move(*partial_));
  partial_.reset();
  return true;
}

void WireDecoder::Hold(std::string_view rest) {
  held_at_ = 0;
  if (!Full() && rest.size() >= kWireHeaderBytes && IsRecordFrame(rest.data()) &&
      rest.size() < CheckedFrameSize(rest.data())) {
    held_.clear();
    StartPartial(rest.data(), rest.substr(kWireHeaderBytes));
    return;
  }
  held_.assign(rest);
}

void WireDecoder::Feed(std::string_view bytes) {
  if (end_) return;
  if (!partial_ && (HasUndecoded() || Full())) {  // the caller did not Continue: kept for later
    held_.append(bytes);
    return;
  }
  if (!partial_ && pending() > 0) {  // complete the frame held from before: its header first
    held_.erase(0, held_at_);
    held_at_ = 0;
    auto move_to_held = [&](size_t want) {
      const size_t take = std::min(want - held_.size(), bytes.size());
      held_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      return held_.size() == want;
    };
    if (!move_to_held(std::max(kWireHeaderBytes, held_.size()))) return;
    const size_t size = CheckedFrameSize(held_.data());
    if (IsRecordFrame(held_.data())) {
      StartPartial(held_.data(), std::string_view(held_).substr(kWireHeaderBytes));
      held_.clear();
    } else {
      if (!move_to_held(size)) return;
      TakeFrame(held_.data());
      held_.clear();
    }
  }
  if (partial_ && !FillPartial(&bytes)) return;
  // The frames wholly inside `bytes` are taken from it directly (none once the bound is
  // reached); only what is left (an incomplete tail, or what the bound leaves undecoded) is
  // kept aside.
  const size_t used = DecodeFrom(bytes);
  if (!end_) Hold(bytes.substr(used));
}

void WireDecoder::Continue() {
  if (end_ || partial_ || pending() == 0) return;
  held_at_ += DecodeFrom(std::string_view(held_).substr(held_at_));
  if (held_at_ == held_.size()) {
    held_.clear();
    held_at_ = 0;
  }
}

bool WireDecoder::HasUndecoded() const {
  if (partial_) return false;  // incomplete, and held_ is empty meanwhile
  const size_t left = pending();
  if (end_ || left < kWireHeaderBytes) return false;
  try {
    return left >= CheckedFrameSize(held_.data() + held_at_);
  } catch (const std::runtime_error&) {
    return true;  // Continue throws, saying what is wrong
  }
}

std::vector<LogRecord> WireDecoder::TakeRecords() {
  decoded_ = 0;
  std::vector<LogRecord> out;
  out.swap(records_);
  return out;
}

}  // namespace podrun
