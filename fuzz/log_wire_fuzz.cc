// Fuzzes the stream-log wire decoder (proto/log_wire.h): frames of any kind, LZ4-compressed
// batches included (proto/wire_compressor.h), fed in pieces of fuzzer-chosen sizes.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "proto/log_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the piece size (0: all at once), so that split headers are tried.
  const size_t piece = data[0] == 0 ? size : data[0];
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  podrun::WireDecoder decoder;
  size_t records = 0;
  try {
    while (!bytes.empty() && !decoder.end()) {
      const std::string_view now = bytes.substr(0, piece);
      bytes.remove_prefix(now.size());
      decoder.Feed(now);
      records += decoder.TakeRecords().size();
      while (decoder.HasUndecoded() && !decoder.end()) {
        decoder.Continue();
        records += decoder.TakeRecords().size();
      }
    }
    records += decoder.TakeRecords().size();
  } catch (const std::runtime_error&) {
    // A malformed frame: the documented error path (the stream is not ours).
  }
  (void)records;
  return 0;
}
