// CRC-32 (the IEEE polynomial of zlib, gzip and PNG): the same values as zlib's crc32(),
// computed with carry-less multiplication (PCLMULQDQ) on CPUs that have it, about five times
// faster than zlib's table-driven loop; zlib's own code on the others and for short inputs.
// The log records' checksum (log_record.h) is computed twice per byte a job prints (written by
// its supervisor, checked when read back), so its speed is the log path's speed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace podrun {

// crc32(crc, data, size) as zlib defines it: Crc32(0, ...) starts a checksum, and
// Crc32(Crc32(0, a), b) == Crc32(0, a followed by b).
uint32_t Crc32(uint32_t crc, const void* data, size_t size);

// The same through zlib alone (for tests and benchmarks of the fast path).
uint32_t Crc32Portable(uint32_t crc, const void* data, size_t size);

}  // namespace podrun
