// See wire_compressor.h.
#include "proto/wire_compressor.h"

#include <lz4.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "proto/log_wire.h"

namespace podrun {

namespace {
constexpr size_t kSizeBytes = sizeof(uint32_t);  // the content size before the block
}  // namespace

WireCompressor::WireCompressor() : state_(static_cast<size_t>(LZ4_sizeofState()), '\0') {}

std::optional<std::string_view> WireCompressor::Compress(std::span<const std::string_view> frames) {
  size_t raw = 0;
  for (std::string_view f : frames) raw += f.size();
  if (raw < kMinBytes || raw > kMaxCompressedBatchBytes) return std::nullopt;
  if (skip_ > 0) {
    --skip_;
    return std::nullopt;
  }
  in_.clear();
  for (std::string_view f : frames) in_.append(f);
  const size_t limit = raw - raw / 10;  // what the block must stay under to pay
  if (out_capacity_ < kWireHeaderBytes + kSizeBytes + limit) {
    out_capacity_ = kWireHeaderBytes + kSizeBytes + limit;
    out_ = std::make_unique_for_overwrite<char[]>(out_capacity_);
  }
  char* const out = out_.get();
  // LZ4 stops (returns 0) once the block would not fit under the limit: a miss costs little.
  const int block =
      LZ4_compress_fast_extState(state_.data(), in_.data(), out + kWireHeaderBytes + kSizeBytes,
                                 static_cast<int>(raw), static_cast<int>(limit), 1);
  if (block <= 0) {
    skip_ = kSkipAfterMiss;
    return std::nullopt;
  }
  std::string header;
  AppendWireCompressedHeader(kSizeBytes + static_cast<size_t>(block), &header);
  std::memcpy(out, header.data(), kWireHeaderBytes);
  const auto size = static_cast<uint32_t>(raw);
  std::memcpy(out + kWireHeaderBytes, &size, kSizeBytes);  // little endian, as frames
  return std::string_view(out, kWireHeaderBytes + kSizeBytes + static_cast<size_t>(block));
}

std::string_view DecompressWireBatch(std::string_view payload) {
  thread_local std::unique_ptr<char[]> content;  // not zero-filled for each batch
  thread_local size_t capacity = 0;
  uint32_t size = 0;
  if (payload.size() > kSizeBytes) std::memcpy(&size, payload.data(), kSizeBytes);
  if (size == 0 || size > kMaxCompressedBatchBytes) {
    throw std::runtime_error("malformed log stream (a compressed batch without a valid size)");
  }
  // A buffer grown for a huge batch is not kept: memory stays with the usual batch size.
  constexpr size_t kUsual = 512u << 10;
  if (capacity < size || (capacity > kUsual && size <= kUsual)) {
    capacity = std::max<size_t>(size, kUsual);
    content = std::make_unique_for_overwrite<char[]>(capacity);
  }
  const int got =
      LZ4_decompress_safe(payload.data() + kSizeBytes, content.get(),
                          static_cast<int>(payload.size() - kSizeBytes), static_cast<int>(size));
  if (got != static_cast<int>(size)) {
    throw std::runtime_error("malformed log stream (a compressed batch that does not decompress)");
  }
  return std::string_view(content.get(), size);
}

}  // namespace podrun
