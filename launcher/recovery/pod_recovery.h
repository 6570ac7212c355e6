// Between a failed attempt and the next (`restarts:`; docs/reference.md, "Provisioning and
// recovery"): what happened to the pod, and what to do before the gang runs again.
// Every slice is asked through its PodSource (SourceStates): a TPU node and a MIG slice alike.
//   - A slice the API reports preempted (a TPU node PREEMPTED or TERMINATED, its queued resource
//     SUSPENDED or FAILED; a MIG's Spot VM TERMINATED): with the spec's pod.create for it,
//     deleted and created again as a whole at once (the intent recorded before the delete), its
//     workers' old host keys forgotten and the new ones pinned; without, waited for. Recorded as
//     a preemption; the next attempt is a recovery.
//   - A slice that is simply gone (deleted by someone else, not by podrun): the run ends.
//   - A worker lost while its slice still reads ready: gcloud is asked again every poll until it
//     says what happened, or the worker answers again where SSH reaches it, or for at most
//     LostWhileReadyLimit(); then the worker is handled as lost (the gang restarts).
//   - Otherwise (a MIG repairing its VMs, a node CREATING) the backoff, then the slices are
//     waited for until they can run ("MIG slice-1 repairing, for 41s" in status).
// While it works, the job is recorded as recovering (what it waits for), for status and ls.
#pragma once

#include <chrono>
#include <variant>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/base/error.h"
#include "launcher/recovery/source_states.h"
#include "launcher/recovery/tpu_provisioner.h"
#include "launcher/store/job_store.h"

namespace podrun {

// Readies `plan`'s pod for restart number `restart` after the failed attempt plan.attempt (its
// addresses updated, and the job record's hosts). Returns why the next attempt runs, or the exit
// code to end with (given up: 130; gcloud or a recreation failed: 3; the node was deleted by
// someone else: 1). `wait` sleeps; false when the user gave up. `nodes` answers for the pod's
// nodes (one describe per node per poll).
std::variant<AttemptReason, ExitCode> PrepareRestart(JobStore& store, AttemptPlan& plan,
                                                     int restart, SourceStates& nodes,
                                                     const TpuWait& wait);

// How long a worker lost while its node reads READY is waited for before it is handled as lost:
// 5 min, or $PODRUN_LOST_READY_LIMIT_SECONDS (tests).
std::chrono::seconds LostWhileReadyLimit();

// True when the attempt that just ended could not start because a TPU node of the pod that
// podrun may recreate is gone (a preemption during the preparation), or podrun itself began to
// recreate one (a keeper killed mid-way), so that the restarts apply to it too.
bool StartFailedOnAGoneNode(JobStore& store, const AttemptPlan& plan, SourceStates& nodes);

}  // namespace podrun
