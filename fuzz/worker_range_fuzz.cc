// Fuzzes the worker range parser (launcher/pod/worker_range.h): ParseWorkerRange on arbitrary
// text, and that FormatWorkerRange's compact form parses back to the same indexes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/base/error.h"
#include "launcher/pod/worker_range.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The first two bytes are the pod's number of workers (0..65535), the rest is the text.
  const int num_workers = data[0] | (data[1] << 8);
  const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  try {
    const auto indexes = podrun::ParseWorkerRange(text, num_workers);
    for (size_t i = 0; i < indexes.size(); ++i) {
      if (indexes[i] < 0 || indexes[i] >= num_workers) __builtin_trap();
      if (i > 0 && indexes[i - 1] >= indexes[i]) __builtin_trap();  // sorted, unique
    }
    if (!indexes.empty() &&
        podrun::ParseWorkerRange(podrun::FormatWorkerRange(indexes), num_workers) != indexes) {
      __builtin_trap();
    }
  } catch (const podrun::Error&) {
    // A bad range: the documented error path (Error(kUsage)).
  }
  return 0;
}
