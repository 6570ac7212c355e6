// SyncPhase: an attempt's sync phase (docs/reference.md, the spec's `sync`; docs/design.md
// decision 11): the local tree becomes a manifest of content-addressed blobs; the blobs the first
// worker lacks go to it through its SSH connection, the other workers fetch them from each other
// down a relay tree (encrypted, over the pod's network), and every workdir is brought to the
// manifest. Call from one thread, BuildManifest first.
#pragma once

#include <optional>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/phase_progress.h"
#include "launcher/sync/manifest.h"

namespace podrun {

class SyncPhase {
 public:
  SyncPhase(const AttemptPlan& plan, AttemptWorkers& workers) : plan_(plan), workers_(workers) {}

  // Builds the manifest of the spec's sync (before anything is started); false (said why) on
  // error. Without a sync in the spec there is none, and Run does nothing.
  bool BuildManifest();
  // Syncs every worker still in; a worker that fails keeps its error and takes no further part.
  void Run(PhaseProgress& progress);

 private:
  const AttemptPlan& plan_;
  AttemptWorkers& workers_;
  std::optional<Manifest> manifest_;  // of the spec's sync, if it has one
};

}  // namespace podrun
