// Fuzzes the LZ4 batch reader of the wire format, DecompressWireBatch
// (proto/wire_compressor.h), on its own: a compressed batch's payload (content size, LZ4 block).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "proto/wire_compressor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  try {
    const std::string_view content = podrun::DecompressWireBatch(payload);
    if (content.size() > podrun::kMaxCompressedBatchBytes) __builtin_trap();
    // Touch every byte: the view must be readable in full.
    volatile unsigned char sum = 0;
    for (const char c : content) sum = static_cast<unsigned char>(sum + c);
    (void)sum;
  } catch (const std::runtime_error&) {
    // Not a compressed batch: the documented error path.
  }
  return 0;
}
