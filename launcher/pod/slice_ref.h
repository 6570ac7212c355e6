// SliceRef: which slice of a pod — a Cloud TPU node or a managed instance group of TPU VMs — by
// name, zone and project (its kind is PodSourceRef's). What discovery, provisioning and recovery
// ask the API about, and what the job record keeps.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace podrun {

struct SliceRef {
  std::string name;
  std::string zone;
  std::optional<std::string> project;  // default: gcloud's configured project
};

// How long a slice's description from the API is reused (one describe costs about a second of
// gcloud's own start-up, more than a whole fan-out to 16 workers).
inline constexpr auto kSliceCacheTtl = std::chrono::minutes(5);

}  // namespace podrun
