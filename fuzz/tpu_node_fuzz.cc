// Fuzzes the readers of gcloud's TPU JSON (launcher/pod/tpu_node.h): ParseTpuNode and
// ParseQueuedResource, on the same input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_node.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    (void)podrun::ParseTpuNode(json, "tpu fuzz");
  } catch (const podrun::Error&) {
    // Not a Node: the documented error path (Error(kUnreachable)).
  }
  try {
    (void)podrun::ParseQueuedResource(json, "queued resource fuzz");
  } catch (const podrun::Error&) {
  }
  return 0;
}
