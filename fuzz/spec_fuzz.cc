// Fuzzes the job spec reader (launcher/spec/spec.h): ParseSpecText on arbitrary YAML text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/base/error.h"
#include "launcher/spec/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)podrun::ParseSpecText(text, "/tmp/podrun-fuzz/job.yaml");
  } catch (const podrun::Error&) {
    // An invalid spec: the documented error path (Error(kUsage) with file:line:col).
  }
  return 0;
}
