// TpuCreate: how podrun creates a Cloud TPU node that does not exist, or was preempted (the
// spec's `pod.create`, or `podrun up`'s options; docs/reference.md, "Provisioning").
#pragma once

#include <chrono>
#include <optional>
#include <string>

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

  bool operator==(const TpuCreate&) const = default;
};

// The reason `create` cannot be asked for, or "" when it can: a type or version with characters
// gcloud never takes, spot with preemptible, preemptible or valid_until without queued... Used
// by the spec reader and `podrun up`.
std::string TpuCreateProblem(const TpuCreate& create);

// capacity_wait when create: does not say it.
inline constexpr std::chrono::seconds kDefaultCapacityWait = std::chrono::hours(1);

// The seconds in "90s", "30m", "6h", "2d" (or "0"); nullopt for anything else.
std::optional<std::chrono::seconds> ParseTpuDuration(const std::string& text);

// How long a stockout of `create` is waited out: its capacity_wait, else kDefaultCapacityWait.
std::chrono::seconds CapacityWaitOf(const TpuCreate& create);

// "v4-32, tpu-ubuntu2204-base, spot, queued", for messages.
std::string DescribeTpuCreate(const TpuCreate& create);

}  // namespace podrun
