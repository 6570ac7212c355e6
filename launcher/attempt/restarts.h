// The spec's `restarts: N`: after a failed attempt (a worker's process failed or was lost, or the
// job hung; not after Ctrl-C, `podrun stop` or a launch that could not start), the whole gang
// runs again as a new attempt, up to N times, after a backoff.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/base/error.h"
#include "launcher/connect/tpu_provisioner.h"
#include "launcher/store/job_store.h"

namespace podrun {

// The wait before restart number `restart` (1, 2, ...): 5 s, doubling, at most 5 min.
std::chrono::seconds RestartBackoff(int restart);

// How a run of attempts begins.
struct RestartOptions {
  // The attempt plan.attempt already runs (a keeper that starts watching it): follow it
  // (FollowAttempt) instead of running it.
  bool follow_running = false;
  // Restarts already made in this run of attempts (a keeper taking over after another).
  int restarts_used = 0;
  // Sleeps between questions to gcloud and for the backoff; false when given up. Default:
  // SleepUnlessInterrupted (Ctrl-C).
  TpuWait wait;
};

// Runs `plan`'s attempt, then restarts as the spec says (recovery.h: after a preemption the
// node is recreated with pod.create; new attempts recorded in `store` with why they run, each
// announced on stderr), and ends with the preemptions' sum. Ctrl-C during a wait ends it: 130.
// Returns the last attempt's code. A detached plan (-d) is not restarted here: its keeper
// (keeper.h) does that.
ExitCode RunAttemptsWithRestarts(JobStore& store, AttemptPlan plan,
                                 const RestartOptions& options = {});

// The time a preemption cost: from its being seen to the start of the attempt after it on its
// workers; nullopt while that attempt has not started.
std::optional<int64_t> TimeLostToPreemption(JobStore& store, const std::string& job_id,
                                            const PreemptionRecord& preemption);

}  // namespace podrun
