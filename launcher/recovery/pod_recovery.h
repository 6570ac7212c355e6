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
#include "launcher/recovery/provisioner.h"
#include "launcher/recovery/source_states.h"
#include "launcher/store/job_store.h"

namespace podrun {

// What a run of attempts has used of the spec's budgets since the last launch or rerun.
struct RecoveriesUsed {
  int restarts = 0;     // restarts after a failure or a hang, of `restarts:`
  int preemptions = 0;  // recoveries after a preemption, of `preemptions:` (never of restarts:)
};

// The gang is not restarted: the budget of what ended the attempt is used up (said, if a
// preemption's), and the run ends with the attempt's own code.
struct NoRestart {};

// Why the next attempt runs, the exit code to end with, or no restart.
using RestartStep = std::variant<AttemptReason, ExitCode, NoRestart>;

// Readies `plan`'s pod for the attempt after the failed attempt plan.attempt (its addresses
// updated, and the job record's hosts): a preemption uses `preemptions:`, anything else
// `restarts:` (`used` says how much of each is used). Returns why the next attempt runs, NoRestart
// when the budget of what happened is used up, or the exit code to end with (given up: 130;
// gcloud refused or a recreation failed: 3; the node was deleted by someone else: 1). The API's
// bad minutes (transient gcloud failures) are waited out, backing off, for up to OutageLimit(),
// and said in the job's recovering record. `wait` sleeps; false when the user gave up. `nodes`
// answers for the pod's nodes (one describe per node per poll).
RestartStep PrepareRestart(JobStore& store, AttemptPlan& plan, const RecoveriesUsed& used,
                           SourceStates& nodes, const ProvisionWait& wait);

// How long the API's bad minutes and a slice's busy states are waited out in a recovery: the
// capacity_wait of the spec's create: for the pod (kDefaultCapacityWait without one).
std::chrono::seconds OutageLimit(const AttemptPlan& plan);

// How long a worker lost while its node reads READY is waited for before it is handled as lost:
// 5 min, or $PODRUN_LOST_READY_LIMIT_SECONDS (tests).
std::chrono::seconds LostWhileReadyLimit();

// True when the attempt that just ended could not start because a TPU node of the pod that
// podrun may recreate is gone (a preemption during the preparation), or podrun itself began to
// recreate one (a keeper killed mid-way), so that the restarts apply to it too.
// The API's bad minutes are waited out (`wait` sleeps); a permanent failure is said and reads
// false.
bool StartFailedOnAGoneSlice(JobStore& store, const AttemptPlan& plan, SourceStates& nodes,
                             const ProvisionWait& wait);

}  // namespace podrun
