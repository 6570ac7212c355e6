// AttemptRunner: one attempt of a job, end to end: connect to every selected worker and
// bootstrap its agent, prepare all, barrier, GO to all at once, stream and merge the logs, stop
// the gang on the first failure, report the root cause, and record it all in the job store.
#pragma once

#include "launcher/attempt/attempt_plan.h"
#include "launcher/base/error.h"
#include "launcher/store/job_store.h"

namespace podrun {

// Runs the attempt and returns the contract's exit code. Prints progress and the outcome to
// stderr and the merged log to stdout/stderr. Ctrl-C stops the job on every worker (130).
// Process-wide effects: SIGINT is blocked in the calling thread (and so in every thread the
// attempt starts) and taken by a watcher thread for the attempt's duration; SIGPIPE is ignored
// for good (tunnels and gRPC write to sockets whose peers may be gone). The open-files limit
// is the caller's (EnsureOpenFiles).
ExitCode RunAttempt(JobStore& store, const AttemptPlan& plan);

// Follows attempt plan.attempt, already started (by a detached launch, or before a keeper was
// restarted), as RunAttempt follows the attempt it started: every worker's log, the gang stopped
// on the first failure or loss, the report and its record. A worker whose agent cannot be
// reached is lost.
ExitCode FollowAttempt(JobStore& store, const AttemptPlan& plan);

}  // namespace podrun
