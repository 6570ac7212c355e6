// `podrun report`'s text (docs/reference.md): per attempt a header (number, reason, duration, how
// it ended), per worker one line of phase durations, first step, steps and end, and the first
// lines of the hang report kept with it; then the run's goodput, the time lost by cause, the
// startup by phase and what is left. With many workers, each attempt is summarised instead (the
// median and the slowest worker per phase, the ends grouped by worker ranges, the stragglers)
// unless every worker is asked for. Also the words the HTML page shares with it.
#pragma once

#include <cstdint>
#include <string>

#include "launcher/insight/run_timeline.h"

namespace podrun {

// Up to this many workers, an attempt is shown one line per worker by default.
constexpr size_t kReportWorkerLines = 16;

struct ReportTextOptions {
  bool every_worker = false;  // one line per worker however many there are
};

std::string FormatReportText(const RunTimeline& run, const RunAccount& account,
                             const ReportTextOptions& options = {});

// "40 ms" (below 0.1 s), "0.3 s", "42.0 s", "3m05s", "2h07m" (FormatDuration from a minute on).
std::string ReportDuration(int64_t ns);
// How a worker ended, on one line: "exited 0", "failed: exit code 1", "lost: node-1 is
// PREEMPTED", "stopped", "running", where it dropped out ("failed in setup: ..."), or "not
// started (connecting)".
std::string WorkerEndText(const WorkerTimeline& worker);
// How an attempt ended: "succeeded", "failed (preemption), exit 1: w2: lost: ...", "stopped", ...
std::string AttemptEndText(const AttemptTimeline& attempt);
// Where worker `w`'s first step is counted from: the end of its last phase, else its run's
// start, else the attempt's start.
int64_t FirstStepBase(const AttemptTimeline& attempt, const WorkerTimeline& w);

}  // namespace podrun
