// TpuCreate: how podrun creates a TPU slice that does not exist, or was preempted (the spec's
// `pod.create`, or `podrun up`'s options; docs/reference.md, "Provisioning"): a Cloud TPU node
// (accelerator_type, version, ...) or a Compute Engine MIG slice (machine_type, topology, ...).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace podrun {

struct TpuCreate {
  std::string accelerator_type = {};  // e.g. v4-32 (gcloud --accelerator-type)
  std::string version = {};           // the TPU software version (--version / --runtime-version)
  bool spot = false;                  // --spot
  bool preemptible = false;           // --preemptible (tpu-vm create only)
  bool queued = false;                // through a queued resource named after the node
  std::optional<std::string> valid_until = {};  // queued: --valid-until-duration, e.g. "6h"
  // How long a create refused for capacity (a stockout) is tried again, e.g. "6h"; "0": not
  // tried again; unset: kDefaultCapacityWait.
  std::optional<std::string> capacity_wait = {};
  // Zones tried, in order, when a create is refused for capacity in the slice's own zone
  // (docs/reference.md, "Provisioning and recovery"): the slice lives where it was made.
  std::vector<std::string> fallback_zones = {};

  // A MIG slice (pod.mig): its VMs' machine type (e.g. tpu7x-standard-4t: 4 chips a VM), the
  // slice's accelerator topology (e.g. 2x2x4: 16 chips, so 4 VMs), their boot image, and how
  // they are provisioned: "standard" (the default), "spot" (also `spot: true`) or "flex_start";
  // max_run_duration (e.g. "7d"): the VMs are deleted after it (flex_start needs it).
  std::string machine_type = {};
  std::string topology = {};
  std::string image_family = {};
  std::string image_project = {};
  std::string provisioning = {};
  std::optional<std::string> max_run_duration = {};

  bool operator==(const TpuCreate&) const = default;
};

// The reason `create` cannot be asked for a Cloud TPU node, or "" when it can: a type or version
// with characters gcloud never takes, spot with preemptible, preemptible or valid_until without
// queued, a MIG's key... Used by the spec reader and `podrun up`.
std::string TpuCreateProblem(const TpuCreate& create);
// The same for a MIG slice: machine_type and topology (whose chips a whole number of VMs hold),
// image_family and image_project needed; no node's key (accelerator_type, version, queued, ...).
std::string MigCreateProblem(const TpuCreate& create);

// A MIG slice's provisioning model: "spot" when provisioning says so or `spot: true`, else
// provisioning, "standard" when unset.
std::string MigProvisioningOf(const TpuCreate& create);
// The number of VMs of a MIG slice: the topology's chips over the chips of one VM (the machine
// type's "-Nt" suffix); nullopt when either cannot be read or they do not divide.
std::optional<int> MigVmCount(const TpuCreate& create);

// The zones a slice of `create` whose own zone is `zone` may live in, in the order creates try
// them: `zone` first, then create.fallback_zones (each once).
std::vector<std::string> SliceZones(const TpuCreate& create, const std::string& zone);

// capacity_wait when create: does not say it.
inline constexpr std::chrono::seconds kDefaultCapacityWait = std::chrono::hours(1);

// The seconds in "90s", "30m", "6h", "2d" (or "0"); nullopt for anything else.
std::optional<std::chrono::seconds> ParseTpuDuration(const std::string& text);

// How long a stockout of `create` is waited out: its capacity_wait, else kDefaultCapacityWait.
std::chrono::seconds CapacityWaitOf(const TpuCreate& create);

// "v4-32, tpu-ubuntu2204-base, spot, queued" (a node) or "tpu7x-standard-4t, 2x2x4 (4 VMs),
// spot" (a MIG slice), for messages.
std::string DescribeTpuCreate(const TpuCreate& create);

}  // namespace podrun
