// The Cloud TPU VM's own facts from the GCE metadata server: its TPU worker number
// (instance/attributes/agent-worker-number), so that podrun's ranks never contradict the TPU
// runtime's. Reached at 169.254.169.254:80 (metadata.google.internal, without DNS: the agent is
// static), with a short timeout: off Google Cloud nothing answers.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace podrun::agent {

inline constexpr char kMetadataAddress[] = "169.254.169.254";
inline constexpr int kMetadataPort = 80;

// GET http://<address>:<port><path> with "Metadata-Flavor: Google"; the body of a 200 answer,
// nullopt otherwise (no server, another status, timeout).
std::optional<std::string> MetadataGet(const std::string& address, int port,
                                       const std::string& path, std::chrono::milliseconds timeout);

// This VM's TPU worker number, or nullopt when it is no Cloud TPU VM. Asked once per agent
// process (a VM's number does not change); thread-safe.
std::optional<int> TpuWorkerNumber();
// Without waiting: TpuWorkerNumber()'s answer once it has one; nullopt while the metadata server
// is being asked, or when the VM has no number.
std::optional<int> TpuWorkerNumberIfKnown();

}  // namespace podrun::agent
