// The agent's side of a start's confirmation (worker/supervisor/start_confirmation.h keeps the
// window, in the job's supervisor): telling a supervisor, before GO, how long the start has to
// be confirmed; and confirming it, whichever agent started the job.
#pragma once

#include <chrono>
#include <filesystem>

#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"

namespace podrun::agent {

// Tells the supervisor of the prepared attempt in `dir` that its start must be confirmed
// within `window` of the release, else it stops the job with `grace`. Throws AgentError
// (kInternal) when the supervisor does not take it.
void RequireConfirmation(const std::filesystem::path& home, const JobDir& dir,
                         std::chrono::milliseconds window, std::chrono::seconds grace);

// Confirms the start of the attempt in `dir` (`snap`: its state when asked). Returns true if it
// had already ended by itself (or on request): nothing was left to confirm. Throws AgentError:
// kFailedPrecondition when its window had passed (it was stopped for it), it never started, or
// it is only prepared; kInternal when its supervisor does not answer.
bool ConfirmStart(const std::filesystem::path& home, const JobDir& dir, const JobSnapshot& snap);

}  // namespace podrun::agent
