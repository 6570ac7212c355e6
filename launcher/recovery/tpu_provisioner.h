// TpuProvisioner: makes a Cloud TPU node exist and be READY, through the user's gcloud
// (docs/reference.md, "Provisioning and recovery"): creates it when missing (directly or through a
// queued resource named after it), recreates it when preempted, deletes it, and waits with the
// API's states on the live line ("tpu node-1: WAITING_FOR_RESOURCES 12m") and on stderr.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/connect/pod.h"
#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_gcloud.h"

namespace podrun {

// Sleeps for the given time; false when the wait was given up (Ctrl-C, a stop).
using TpuWait = std::function<bool(std::chrono::seconds)>;

// What EnsureTpuNode did.
enum class TpuNodeAction { kExisted, kCreated, kRecreated };

struct TpuNodeReady {
  TpuNode node;
  TpuNodeAction action = TpuNodeAction::kExisted;
  double waited_seconds = 0;  // from the first gcloud call to READY
};

// True when the node (or its queued resource) can only come back by being created again:
// PREEMPTED or TERMINATED, or a queued resource SUSPENDED or FAILED.
bool NeedsRecreation(const std::optional<TpuNode>& node, const std::optional<QueuedResource>& qr);

class TpuProvisioner {
 public:
  // `poll`: how often gcloud is asked while waiting; `wait` sleeps between the questions.
  TpuProvisioner(TpuQuery node, TpuCreate create, std::chrono::seconds poll, TpuWait wait)
      : node_(std::move(node)), create_(std::move(create)), poll_(poll), wait_(std::move(wait)) {}

  // Makes the node READY: an existing READY node of the same type and version is used as it is
  // (another type or version: Error(kUsage) naming both); a missing one is created; a preempted
  // one is deleted and created again (only with `recreate_preempted`; else Error(kUnreachable)).
  // Then waits for READY. Throws Error(kUnreachable) with gcloud's words when gcloud fails or a
  // queued resource fails, Error(kInterrupted) when the wait was given up.
  TpuNodeReady Ensure(bool recreate_preempted = true);
  // Deletes the node (and its queued resource) whatever its state, creates it again, waits.
  TpuNodeReady Recreate();
  // Deletes the queued resource (with its node) and the node. False when neither existed.
  bool Delete();

 private:
  void Create();
  TpuNode WaitUntilReady();

  const TpuQuery node_;
  const TpuCreate create_;
  const std::chrono::seconds poll_;
  const TpuWait wait_;
};

// `gcloud ... describe` every `fallback`, or every $PODRUN_TPU_POLL_SECONDS (tests).
std::chrono::seconds TpuPollInterval(std::chrono::seconds fallback);

// Removes the keys of `hosts` (at `port`) from the known_hosts file `known_hosts`
// (`ssh-keygen -R`): the VMs of a node podrun has just created have new host keys, recorded
// again at the first connection. A failure is said, not thrown.
void ForgetHostKeys(const std::string& known_hosts, const std::vector<std::string>& hosts,
                    int port);

// ForgetHostKeys for every worker of `pod` (a pod on a node podrun has just created).
void ForgetPodHostKeys(const Pod& pod);

}  // namespace podrun
