// See worker_state.h.
#include "launcher/store/worker_state.h"

#include <array>
#include <cstddef>

namespace podrun {
namespace {

constexpr std::array<const char*, 8> kWorkerStateNames = {
    "pending", "connecting", "setup", "running", "exited", "failed", "lost", "stopped"};
constexpr std::array<const char*, 6> kAttemptStateNames = {"starting", "running", "succeeded",
                                                           "failed",   "stopped", "start_failed"};

}  // namespace

const char* WorkerStateName(WorkerState state) {
  return kWorkerStateNames[static_cast<size_t>(state)];
}

std::optional<WorkerState> ParseWorkerState(std::string_view name) {
  for (size_t i = 0; i < kWorkerStateNames.size(); ++i) {
    if (name == kWorkerStateNames[i]) return static_cast<WorkerState>(i);
  }
  return std::nullopt;
}

const char* AttemptStateName(AttemptState state) {
  return kAttemptStateNames[static_cast<size_t>(state)];
}

std::optional<AttemptState> ParseAttemptState(std::string_view name) {
  for (size_t i = 0; i < kAttemptStateNames.size(); ++i) {
    if (name == kAttemptStateNames[i]) return static_cast<AttemptState>(i);
  }
  return std::nullopt;
}

AttemptState EndedAttemptState(const std::vector<WorkerState>& workers) {
  bool stopped = false;
  for (WorkerState w : workers) {
    if (w == WorkerState::kFailed || w == WorkerState::kLost) return AttemptState::kFailed;
    stopped = stopped || w == WorkerState::kStopped;
  }
  return stopped ? AttemptState::kStopped : AttemptState::kSucceeded;
}

}  // namespace podrun
