// The states of a job's workers and attempts, as the store records them and status shows them.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace podrun {

// A worker's state (docs/reference.md, `podrun status`).
enum class WorkerState {
  kPending,
  kConnecting,
  // Prepared (workdir, sync, mounts, setup done, the process waiting for the start); its name
  // is "setup", as `status` has always shown it (docs/reference.md).
  kPrepared,
  kRunning,
  kExited,
  kFailed,
  kLost,
  kStopped
};

// "pending", "connecting", "setup", "running", "exited", "failed", "lost", "stopped".
const char* WorkerStateName(WorkerState state);
// The state of a name WorkerStateName returns; nullopt for any other string.
std::optional<WorkerState> ParseWorkerState(std::string_view name);

// An attempt's outcome so far. kStartFailed: a worker could not be reached or set up, so
// nothing ran (exit 3).
enum class AttemptState { kStarting, kRunning, kSucceeded, kFailed, kStopped, kStartFailed };

// "starting", "running", "succeeded", "failed", "stopped", "start_failed".
const char* AttemptStateName(AttemptState state);
std::optional<AttemptState> ParseAttemptState(std::string_view name);

// The one rule for how an attempt ended once its workers have: failed if a worker failed or was
// lost, else stopped if one was stopped, else succeeded. Used by the launch that ran it (Gang)
// and by the commands that settle it later from the store (SettledAttemptState).
AttemptState EndedAttemptState(const std::vector<WorkerState>& workers);

}  // namespace podrun
