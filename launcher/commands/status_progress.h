// What `podrun status` shows of an attempt's progress (docs/reference.md, "podrun status"): each
// worker's last step and when, its straggler note, and the verdict of the hang report kept when
// the attempt's stall watch fired (insight/why_verdict.h). Pure: made from the job store's
// records (store/run_records.h) and the time now.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/store/run_records.h"

namespace podrun {

// How many verdict lines the table shows before "... N more".
inline constexpr size_t kHangReportLines = 10;

// "1513 (12s ago)", the worker's last step and how long before `now_ns` it printed it; "-" when
// it printed none.
std::string StepText(const WorkerProgress& progress, int64_t now_ns);

// The worker's fields for `status --json`: step, step_ns, steps_per_s, straggler (null when
// unknown).
nlohmann::json ProgressJson(const WorkerProgress& progress);

// The hang report's JSON as kept (`podrun why --json`'s object); null if it does not parse.
nlohmann::json HangReportJson(const HangReportRecord& report);

// The lines status prints of a kept hang report: a heading with when it was made, then its
// verdict lines (suspects first), at most `max_lines` of them, then "... N more" naming where
// the rest are (`podrun status JOB --json`). A report whose JSON has no verdict shows the first
// lines of its text instead.
std::vector<std::string> HangReportLines(const HangReportRecord& report, const std::string& job_id,
                                         size_t max_lines = kHangReportLines);

}  // namespace podrun
