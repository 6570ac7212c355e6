// The spec's `restarts: N`: after a failed attempt (a worker's process failed or was lost, or the
// job hung; not after Ctrl-C, `podrun stop` or a launch that could not start), the whole gang
// runs again as a new attempt, up to N times, after a backoff.
#pragma once

#include <chrono>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/base/error.h"
#include "launcher/store/job_store.h"

namespace podrun {

// The wait before restart number `restart` (1, 2, ...): 5 s, doubling, at most 5 min.
std::chrono::seconds RestartBackoff(int restart);

// Runs `plan`'s attempt, then restarts as the spec says (new attempts recorded in `store`, each
// announced on stderr). Ctrl-C during a backoff ends it: 130. Returns the last attempt's code.
// A detached plan (-d) is not restarted: nobody watches it.
ExitCode RunAttemptsWithRestarts(JobStore& store, AttemptPlan plan);

}  // namespace podrun
