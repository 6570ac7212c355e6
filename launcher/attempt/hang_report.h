// The hang report of an attempt (docs/reference.md, "podrun why"): made when the stall watch
// fires, before the gang is stopped, from every worker the attempt has (insight/why_gather.h),
// said, and kept with the attempt.
#pragma once

#include <string>
#include <vector>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"
#include "launcher/insight/step_tracker.h"
#include "launcher/insight/why_verdict.h"

namespace podrun {

// Gathers the report (the spec's stacks: signal first), says its verdict and the suspects'
// details, records it, and returns its verdict lines. Blocks for a few seconds.
std::vector<WhyLine> MakeHangReport(const AttemptPlan& plan, AttemptRecorder& recorder,
                                    AttemptWorkers& workers, const StepTracker* steps);

}  // namespace podrun
