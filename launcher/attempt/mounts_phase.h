// MountsPhase: an attempt's mounts phase (docs/reference.md, the spec's `mounts`): the spec's
// mounts on every worker still in, before setup, the workers that serve an nfs export first.
#pragma once

#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/phase_progress.h"

namespace podrun {

class MountsPhase {
 public:
  MountsPhase(const AttemptPlan& plan, AttemptWorkers& workers) : plan_(plan), workers_(workers) {}

  // Mounts on every worker still in (nothing without mounts in the spec); a worker that fails,
  // or whose nfs server failed, keeps its error and takes no further part. From one thread.
  void Run(PhaseProgress& progress);

 private:
  const AttemptPlan& plan_;
  AttemptWorkers& workers_;
};

}  // namespace podrun
