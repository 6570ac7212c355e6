// The spec's `restarts: N`: after a failed attempt (a worker's process failed or was lost, or the
// job hung; not after Ctrl-C, `podrun stop` or a launch that could not start), the whole gang
// runs again as a new attempt, up to N times, after a backoff. A preemption is not a failure: it
// is recovered up to `preemptions:` times (default unlimited) and never uses up `restarts:`.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/base/error.h"
#include "launcher/recovery/keeper_signals.h"
#include "launcher/recovery/pod_recovery.h"
#include "launcher/recovery/provisioner.h"
#include "launcher/store/job_store.h"
#include "launcher/store/recovery_records.h"

namespace podrun {

// The wait before restart number `restart` (1, 2, ...): 5 s, doubling, at most 5 min.
std::chrono::seconds RestartBackoff(int restart);

// How a run of attempts begins.
struct RestartOptions {
  // The attempt plan.attempt already runs (a keeper that starts watching it): follow it
  // (FollowAttempt) instead of running it.
  bool follow_running = false;
  // Automatic restarts and recoveries already made since the last launch or rerun (a keeper
  // taking over after another): RecoveriesSince.
  RecoveriesUsed used;
  // The attempt plan.attempt already ended with this code (a keeper finding it failed, e.g. a
  // detached start that failed): neither run nor followed; restarted as the rules say.
  std::optional<ExitCode> ended = std::nullopt;
  // Sleeps between questions to gcloud and for the backoff; false when given up. Default:
  // SleepUnlessInterrupted (Ctrl-C).
  ProvisionWait wait;
  // The keeper's SIGTERM (keeper_signals.h): a stop during a recovery gives it up, deletes the
  // queued resource the recovery made, and records the job stopped (its latest attempt's state,
  // the recovering record and the recreation intents cleared). Null outside a keeper.
  KeeperSignals* keeper_signals = nullptr;
};

// The automatic attempts made since the last attempt that a launch or rerun made, by budget:
// restarts after a failure or hang (of `restarts:`), recoveries after a preemption (of
// `preemptions:`). What a keeper taking over has used.
RecoveriesUsed RecoveriesSince(const std::vector<AttemptRecord>& attempts);

// Whether a detached launch of `spec` has something for a keeper to do: restarts: above 0, or
// a pod.create to recreate preempted slices with (and preemptions: not 0).
bool SpecNeedsKeeper(const JobSpec& spec);

// Runs `plan`'s attempt, then restarts as the spec says: after a failure up to `restarts:`, after
// a preemption up to `preemptions:` (pod_recovery.h: the node is recreated with pod.create; new
// attempts recorded in `store` with why they run, each announced on stderr), and ends with the
// preemptions' sum. Ctrl-C during a wait ends it: 130.
// Returns the last attempt's code. A detached plan (-d) is not restarted here: its keeper
// (recovery/keeper.h) does that. A worker out of reach whose TPU node the API reports gone is
// lost at once (SourceStates: one describe per slice per 3 s).
ExitCode RunAttemptsWithRestarts(JobStore& store, AttemptPlan plan,
                                 const RestartOptions& options = {});

// Whether a detached launch or rerun that ended its start with `code` hands the job to a keeper
// (with restarts:): started (kOk), or a start or first moments that failed (kFailed,
// kUnreachable), which the keeper restarts as an attached launch would (RestartOptions::ended).
// Not a bad spec (kUsage) nor Ctrl-C.
bool KeeperTakesOver(ExitCode code);

// The time a preemption cost: from its being seen to the start of the attempt after it on its
// workers; nullopt while that attempt has not started.
std::optional<int64_t> TimeLostToPreemption(JobStore& store, const std::string& job_id,
                                            const PreemptionRecord& preemption);

}  // namespace podrun
