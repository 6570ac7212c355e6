// Between a failed attempt and the next (`restarts:`; docs/reference.md, "Provisioning and
// recovery"): what happened to the pod, and what to do before the gang runs again.
//   - A TPU node found PREEMPTED or TERMINATED (its queued resource SUSPENDED or FAILED): with
//     the spec's pod.create, deleted and created again at once (no backoff), its new VMs' old host
//     keys forgotten; without, waited for until READY. Either way recorded as a preemption
//     (seen at, back at) and the next attempt resumes from "preemption".
//   - A worker lost while its node still reads READY: gcloud is asked again every poll until it
//     says what happened or the worker answers again.
//   - Otherwise the backoff, then the nodes are checked READY (as before).
#pragma once

#include <string>
#include <variant>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/base/error.h"
#include "launcher/connect/tpu_provisioner.h"
#include "launcher/store/job_store.h"

namespace podrun {

// Readies `plan`'s pod for restart number `restart` after the failed attempt plan.attempt (its
// addresses updated, and the job record's hosts). Returns why the next attempt runs
// ("preemption", "hang" or "failure"), or the exit code to end with (given up: 130; gcloud or
// a recreation failed: 3). `wait` sleeps; false when the user gave up.
std::variant<std::string, ExitCode> PrepareRestart(JobStore& store, AttemptPlan& plan, int restart,
                                                   const TpuWait& wait);

// True when the attempt that just ended could not start because its TPU node is gone (a
// preemption during the preparation), so that the restarts apply to it too.
bool StartFailedOnAGoneNode(const AttemptPlan& plan);

}  // namespace podrun
