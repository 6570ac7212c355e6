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
  std::string project;                 // P of that name ("" when the name has no project)
  std::string state;                   // READY, CREATING, PREEMPTED, ...
  std::string accelerator_type;        // e.g. v4-64
  std::string runtime_version;         // runtimeVersion, e.g. tpu-ubuntu2204-base
  std::string queued_resource;         // the last part of queuedResource, if one made it
  std::vector<TpuEndpoint> endpoints;  // worker i is endpoint i
};

// Reads the Node JSON. A node that is not READY may have no endpoints. Throws
// Error(kUnreachable) naming `what` (e.g. "tpu node-1") when it is not a Node: not JSON, a READY
// node without networkEndpoints, an endpoint without an ipAddress.
TpuNode ParseTpuNode(std::string_view json, const std::string& what);

// A queued resource as `gcloud compute tpus queued-resources describe --format=json` prints it.
struct QueuedResource {
  std::string name;   // the last part of "projects/P/locations/Z/queuedResources/NAME"
  std::string state;  // state.state: WAITING_FOR_RESOURCES, PROVISIONING, ACTIVE, FAILED, ...
};

// Reads the QueuedResource JSON; throws as ParseTpuNode.
QueuedResource ParseQueuedResource(std::string_view json, const std::string& what);

// True for a node state that only a recreation ends: PREEMPTED or TERMINATED.
bool IsNodeGone(const std::string& state);
// True when the node (or its queued resource) can only come back by being created again:
// PREEMPTED or TERMINATED, or a queued resource SUSPENDED or FAILED.
bool NeedsRecreation(const std::optional<TpuNode>& node, const std::optional<QueuedResource>& qr);

}  // namespace podrun
