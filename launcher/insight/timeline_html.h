// One timeline of `podrun report --html`'s page (report_html.h): on one time axis, a row per
// worker with its phases, the wait for its first step, its steps band (coloured by its rate
// against the attempt's median, the step samples drawn over it) and its end; for the whole run
// also a "run" row (startup, steps, time lost by cause) and vertical markers (attempts' starts,
// preemptions, nodes READY again, the recovery between shaded). Every phase, wait and steps
// element has data-worker, data-attempt, data-phase, data-start-ns and data-end-ns (its real
// times; what lies outside the axis is cut at its edges).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "launcher/insight/run_timeline.h"

namespace podrun {

// [t0, t1] (wall clock ns) as 0..100 percent of a row's width.
struct TimelineAxis {
  int64_t t0 = 0;
  int64_t t1 = 1;
  double Percent(int64_t t) const {
    return 100.0 * static_cast<double>(std::clamp(t, t0, t1) - t0) / static_cast<double>(t1 - t0);
  }
  // "left:L%;width:W%" of [from, to].
  std::string Box(int64_t from, int64_t to) const {
    const double left = Percent(from);
    return fmt::format("left:{:.4f}%;width:{:.4f}%", left, std::max(0.0, Percent(to) - left));
  }
};

struct TimelineView {
  std::string id;  // the timeline element's id
  TimelineAxis axis;
  // Only this attempt (an index into the run's attempts), without the run row and markers;
  // none: every attempt, with them.
  std::optional<size_t> attempt;
};

std::string TimelineHtml(const RunTimeline& run, const RunAccount& account,
                         const TimelineView& view);

}  // namespace podrun
