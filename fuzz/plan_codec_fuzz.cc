// Fuzzes the supervisor's plan codec (worker/supervisor/plan_codec.h): DecodeStrings on
// arbitrary bytes, and that what it accepts encodes back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "worker/supervisor/plan_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto strings = podrun::agent::DecodeStrings(bytes);
    if (podrun::agent::EncodeStrings(strings) != bytes) __builtin_trap();
  } catch (const std::runtime_error&) {
    // Malformed (a length past the end): the documented error path.
  }
  return 0;
}
