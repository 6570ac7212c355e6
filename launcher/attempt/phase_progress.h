// PhaseProgress: the live line of an attempt's phases before the start (output/live_progress.h),
// as the phases drive it: each phase counts the workers still in when it begins. Until Start,
// and where stderr is not a terminal, nothing is drawn; a worker's Done reaches the phases'
// recorded times (PhaseTimes) whether drawn or not. Start, End and Begin from the phases'
// thread; SetDetail and Done from any.
#pragma once

#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/phase_times.h"
#include "launcher/output/live_progress.h"

namespace podrun {

class PhaseProgress {
 public:
  PhaseProgress(const AttemptWorkers& workers, PhaseTimes& times)
      : workers_(workers), times_(times) {}

  // Draws the live line (on a terminal) from now on.
  void Start() { line_.emplace(STDERR_FILENO); }
  // Ends the live line (before the job's or the setup's output, or the report).
  void End() {
    if (line_) line_->End();
  }

  // Starts a phase of the live line over the workers still in.
  void Begin(const std::string& phase) {
    if (!line_) return;
    std::vector<int> indexes;
    for (const auto& w : workers_.all()) {
      if (w->error.empty()) indexes.push_back(w->index);
    }
    line_->BeginPhase(phase, indexes);
  }
  // Shown after the current phase's count: "sync 16/16 (12.0 MB)".
  void SetDetail(const std::string& detail) {
    if (line_) line_->SetDetail(detail);
  }
  // Worker `index` is through the current phase (done or failed).
  void Done(int index) {
    times_.Done(index);
    if (line_) line_->Done(index);
  }

 private:
  const AttemptWorkers& workers_;
  PhaseTimes& times_;
  std::optional<LiveProgress> line_;
};

}  // namespace podrun
