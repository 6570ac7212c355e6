// Fuzzes the reader of the agent's announcement (launcher/agent_link/agent_bootstrap.h):
// ParseAnnouncement on arbitrary agent stdout.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "launcher/agent_link/agent_announcement.h"
#include "launcher/base/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view output(reinterpret_cast<const char*>(data), size);
  std::string other;
  try {
    (void)podrun::ParseAnnouncement(output, &other);
  } catch (const podrun::Error&) {
    // A "PODRUN-AGENT ERROR" line: the documented error path (Error(kUnreachable)).
  }
  return 0;
}
