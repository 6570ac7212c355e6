// Fuzzes the wire format's round trip (proto/log_wire.h, proto/wire_compressor.h): records made
// from the input, framed, LZ4-compressed by WireCompressor when it pays, then decoded by
// WireDecoder must come back equal, in order.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/log_wire.h"
#include "proto/wire_compressor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The records' data: the input cut at each 0xff byte.
  std::vector<podrun::LogRecord> records;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const size_t cut = rest.find('\xff');
    podrun::LogRecord record;
    record.seq = records.size() + 1;
    record.time_ns = static_cast<int64_t>(record.seq) * 1'000'003 - 5'000;
    record.data = std::string(rest.substr(0, cut));
    record.stream =
        record.data.size() % 2 ? podrun::LogStream::kStderr : podrun::LogStream::kStdout;
    records.push_back(std::move(record));
    rest.remove_prefix(cut == std::string_view::npos ? rest.size() : cut + 1);
  }
  std::vector<std::string> frames;
  for (const auto& record : records) {
    frames.emplace_back();
    podrun::AppendWireRecord(record, &frames.back());
  }
  const std::vector<std::string_view> views(frames.begin(), frames.end());
  podrun::WireCompressor compressor;
  std::string stream;
  if (const std::optional<std::string_view> compressed = compressor.Compress(views)) {
    stream = *compressed;
  } else {
    for (const auto& frame : frames) stream += frame;
  }
  podrun::AppendWireEnd("end", &stream);

  // Decoding our own frames must not throw: an exception here is a bug, and propagates.
  podrun::WireDecoder decoder;
  decoder.Feed(stream);
  std::vector<podrun::LogRecord> decoded = decoder.TakeRecords();
  while (decoder.HasUndecoded()) {
    decoder.Continue();
    for (auto& record : decoder.TakeRecords()) decoded.push_back(std::move(record));
  }
  if (decoded != records || !decoder.end() || *decoder.end() != "end") __builtin_trap();
  return 0;
}
