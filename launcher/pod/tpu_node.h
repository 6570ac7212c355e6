// A Cloud TPU VM node as `gcloud compute tpus tpu-vm describe NAME --format=json` prints it: the
// Cloud TPU v2 API's Node resource (docs/reference.md, "Discovery"), reduced to what podrun uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podrun {

struct TpuEndpoint {
  std::string internal_ip;                 // networkEndpoints[i].ipAddress
  std::optional<std::string> external_ip;  // networkEndpoints[i].accessConfig.externalIp
};

struct TpuNode {
  std::string name;                    // the last part of "projects/P/locations/Z/nodes/NAME"
  std::string state;                   // READY, CREATING, PREEMPTED, ...
  std::string accelerator_type;        // e.g. v4-64
  std::vector<TpuEndpoint> endpoints;  // worker i is endpoint i
};

// Reads the Node JSON. A node that is not READY may have no endpoints. Throws
// Error(kUnreachable) naming `what` (e.g. "tpu node-1") when it is not a Node: not JSON, a READY
// node without networkEndpoints, an endpoint without an ipAddress.
TpuNode ParseTpuNode(std::string_view json, const std::string& what);

}  // namespace podrun
