// Fuzzes the host list parser (launcher/pod/host_list.h): the lines of a host file and
// "[user@]host[:port]" entries, and that an entry's ToString parses back to the same entry.
#include <cstddef>
#include <cstdint>
#include <string>

#include "launcher/base/error.h"
#include "launcher/pod/host_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& host : podrun::ParseHostLines(text, "fuzz-hosts")) {
      if (podrun::ParseHostSpec(host.ToString()) != host) __builtin_trap();
    }
  } catch (const podrun::Error&) {
    // A bad entry: the documented error path (Error(kUsage)).
  }
  try {
    const podrun::HostSpec host = podrun::ParseHostSpec(text);
    if (podrun::ParseHostSpec(host.ToString()) != host) __builtin_trap();
  } catch (const podrun::Error&) {
  }
  // The comma-separated form of --hosts (not "@FILE": that reads a file).
  if (!text.empty() && text[0] != '@') {
    try {
      (void)podrun::ParseHostList(text);
    } catch (const podrun::Error&) {
    }
  }
  return 0;
}
