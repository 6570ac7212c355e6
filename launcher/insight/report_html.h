// `podrun report --html FILE` (docs/reference.md): the report as one self-contained page that
// opens offline (inline CSS and script, no external fonts, scripts or URLs): the run's goodput
// and lost time, the attempts (their hang reports folded), then a timeline of the whole run and
// one per attempt from its start to its workers' first steps (timeline_html.h): a row per
// worker, the attempts side by side, each phase coloured (with a legend), the steps band coloured
// by the worker's rate against the attempt's median (stragglers stand out), each worker's end,
// and vertical markers for the attempts' starts and the preemptions, the pod's recovery shaded.
// Every phase element carries data-worker, data-attempt, data-phase, data-start-ns and
// data-end-ns; opened with `?measure`, the page writes each such element's box into
// <pre id="layout"> (JSON) for tests. Every text from the store is HTML-escaped.
#pragma once

#include <string>
#include <string_view>

#include "launcher/insight/run_timeline.h"

namespace podrun {

std::string FormatReportHtml(const RunTimeline& run, const RunAccount& account);

// `text` with &, <, >, " and ' as character references.
std::string HtmlEscape(std::string_view text);

}  // namespace podrun
