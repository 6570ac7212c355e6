// `podrun report --json` (docs/reference.md): the run's timeline and account as one JSON object:
// job, goodput, wall_s, steps_s, lost_s by cause, startup_s (and its parts), other_s, the lost
// intervals, the attempts with their hang reports and workers (phases, steps, samples, end) and
// the recoveries
// between attempts. Times are ns since the epoch (`*_ns`) or seconds (`*_s`); null where unknown.
#pragma once

#include <nlohmann/json.hpp>

#include "launcher/insight/run_timeline.h"

namespace podrun {

nlohmann::json ReportJson(const RunTimeline& run, const RunAccount& account);

}  // namespace podrun
