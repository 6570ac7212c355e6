// Fuzzes the on-disk log record decoder (proto/log_record.h): DecodeLogRecords and
// LogRecordSizeAt on arbitrary bytes (a torn or corrupt log file).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/log_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // DecodeLogRecords has no error path: what is not a valid record ends what it returns.
  const auto records = podrun::DecodeLogRecords(bytes);
  size_t at = 0;
  for (const auto& record : records) {
    // Each record decoded is valid, so its size from the header is known and within the input.
    const auto n = podrun::LogRecordSizeAt(bytes.substr(at));
    if (!n || *n != podrun::kLogRecordHeaderBytes + record.data.size() || *n > size - at) {
      __builtin_trap();
    }
    at += *n;
  }
  // And LogRecordSizeAt at every offset of a short input (a reader resyncing).
  for (size_t i = 0; i < size && i < 64; ++i) (void)podrun::LogRecordSizeAt(bytes.substr(i));
  return 0;
}
