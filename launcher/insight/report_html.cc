// `podrun report --html` (see report_html.h): the page, its style and script, the account and
// the attempts on top, then its timelines (timeline_html.h).
#include "launcher/insight/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "launcher/insight/report_text.h"
#include "launcher/insight/timeline_html.h"
#include "launcher/output/time_format.h"

namespace podrun {
namespace {

constexpr const char* kCss = R"css(
:root{--label:72px}
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 4px}
.summary span{margin-right:16px;white-space:nowrap}
.legend{margin:10px 0;display:flex;flex-wrap:wrap;gap:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
.timeline{position:relative;margin:8px 0 16px;overflow:hidden}
.lane{position:relative;height:16px;margin-left:var(--label)}
.row{display:flex;height:var(--row)}
.row .label{width:var(--label);flex:none;font-size:11px;line-height:var(--row);overflow:hidden;
 white-space:nowrap}
.dense .row.worker .label{font-size:0}
.dense .row.worker .label.shown{font-size:9px;line-height:9px;overflow:visible}
.row.run{height:18px}.row.run .label{line-height:18px}
.track{position:relative;flex:1;background:#f4f4f4;box-shadow:inset 0 -1px #fff}
.seg{position:absolute;top:1px;bottom:1px;min-width:1px}
.run .track{background:#e8e8e8}
.agents{background:#7b68ee}.sync{background:#4682b4}.mounts{background:#20b2aa}
.setup{background:#daa520}.start{background:#ff8c00}.wait{background:#d3d3d3}
.steps-ok{background:#2e8b57}.steps-slow{background:#c9a100}.steps-straggler{background:#d2452c}
.steps-run{background:#2e8b57}.startup{background:#a9a9a9}
.lost-preemption{background:repeating-linear-gradient(45deg,#c00 0 3px,#f4b0b0 3px 6px)}
.lost-hang{background:repeating-linear-gradient(45deg,#8b008b 0 3px,#e0b0e0 3px 6px)}
.lost-failure{background:repeating-linear-gradient(45deg,#b22222 0 3px,#f0c0a0 3px 6px)}
.lost-stop{background:repeating-linear-gradient(45deg,#555 0 3px,#ccc 3px 6px)}
.seg.failed{outline:2px solid #c00;outline-offset:-2px}
.end{position:absolute;top:0;bottom:0;width:3px;margin-left:-1px}
.end-lost{background:#c00}.end-failed{background:#b22222}.end-stopped{background:#555}
.marks{position:absolute;top:0;bottom:0;left:var(--label);right:0;pointer-events:none}
.mark{position:absolute;top:16px;bottom:0;border-left:1px dashed #333}
.mark.preempt{border-left:2px solid #c00}.mark.back{border-left:2px solid #080}
.band{position:absolute;top:16px;bottom:0;background:rgba(200,0,0,.10)}
.tick{position:absolute;top:0;height:16px;font-size:10px;color:#666;border-left:1px solid #bbb;
 padding-left:2px;white-space:nowrap}
.mlabel{position:absolute;font-size:10px;line-height:12px;white-space:nowrap;padding:0 2px}
.spark{position:absolute;top:1px;bottom:1px;overflow:visible;pointer-events:none}
.spark polyline{fill:none;stroke:#fff;stroke-width:1.5;vector-effect:non-scaling-stroke;opacity:.6}
h2{font-size:14px;margin:18px 0 4px}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px 2px 0;text-align:left}
)css";

// With ?measure: each element with data-phase as laid out, with its timeline's axis and its
// row's box, as JSON in <pre id="layout">.
constexpr const char* kScript = R"js(
(function(){
if(!/[?&]measure/.test(location.search))return;
var out={elements:[]};
document.querySelectorAll('[data-phase]').forEach(function(e){
 var r=e.getBoundingClientRect(),t=e.parentElement.getBoundingClientRect(),
  tl=e.closest('.timeline');
 out.elements.push({timeline:tl.id,axis_start_ns:tl.dataset.startNs,axis_end_ns:tl.dataset.endNs,
  track_x:t.left,track_width:t.width,worker:e.dataset.worker,attempt:e.dataset.attempt,
  phase:e.dataset.phase,start_ns:e.dataset.startNs,end_ns:e.dataset.endNs,x:r.left,y:r.top,
  width:r.width,height:r.height});});
document.getElementById('layout').textContent=JSON.stringify(out);
})();
)js";

std::string Summary(const RunTimeline& run, const RunAccount& account) {
  std::string out = "<p class=\"summary\">";
  out += account.stepped
             ? fmt::format("<span><b>goodput {:.1f}%</b></span><span>steps {} of {}</span>",
                           account.goodput * 100, ReportDuration(account.steps_ns),
                           ReportDuration(account.wall_ns))
             : fmt::format("<span><b>no steps recorded</b> in {}</span>",
                           ReportDuration(account.wall_ns));
  for (size_t c = 0; c < kLostCauses; ++c) {
    out += fmt::format("<span>lost to {}: {}</span>", LostCauseName(static_cast<LostCause>(c)),
                       ReportDuration(account.lost_ns[c]));
  }
  out += fmt::format("<span>startup {}</span><span>other {}</span></p>\n",
                     ReportDuration(account.startup_ns), ReportDuration(account.other_ns));
  out +=
      "<table><tr><th>attempt</th><th>reason</th><th>started</th><th>took</th><th>ended</th>"
      "</tr>\n";
  for (const AttemptTimeline& a : run.attempts) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       a.number, AttemptReasonName(a.reason), FormatLocalTime(a.started_ns),
                       ReportDuration(a.ended_ns.value_or(run.now_ns) - a.started_ns),
                       HtmlEscape(AttemptEndText(a)));
  }
  out += "</table>\n";
  for (const AttemptTimeline& a : run.attempts) {
    if (!a.hang_report) continue;
    out += fmt::format(
        "<details><summary>attempt {}: hang report, made {}</summary><pre>{}</pre>"
        "</details>\n",
        a.number, FormatLocalTime(a.hang_report->made_ns), HtmlEscape(a.hang_report->text));
  }
  return out;
}

std::string Legend() {
  std::string out = "<div class=\"legend\">";
  const std::pair<const char*, const char*> items[] = {
      {"agents", "agents"},
      {"sync", "sync"},
      {"mounts", "mounts"},
      {"setup", "setup"},
      {"start", "start"},
      {"wait", "to the first step"},
      {"steps-ok", "steps"},
      {"steps-slow", "steps, below 90% of the median rate"},
      {"steps-straggler", "steps, straggler"},
      {"startup", "startup"},
      {"lost-preemption", "lost: preemption"},
      {"lost-hang", "lost: hang"},
      {"lost-failure", "lost: failure"},
      {"lost-stop", "lost: stop"}};
  for (const auto& [cls, text] : items) {
    out += fmt::format("<span><i class=\"{}\"></i>{}</span>", cls, text);
  }
  return out + "</div>\n";
}
}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string FormatReportHtml(const RunTimeline& run, const RunAccount& account) {
  TimelineAxis axis{account.start_ns, std::max(account.end_ns, account.start_ns + 1)};
  for (const RecoveryInterval& r : run.recoveries) {
    axis.t1 = std::max(axis.t1, r.back_ns.value_or(run.now_ns));
  }
  const std::string title = fmt::format("podrun report: job {} ({})", run.job_id, run.job_name);
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>{}</title>\n"
      "<style>{}</style></head><body>\n<h1>{}</h1>\n<div>pod {} · started {}</div>\n",
      HtmlEscape(title), kCss, HtmlEscape(title), HtmlEscape(run.pod),
      FormatLocalTime(account.start_ns));
  if (run.attempts.empty()) return out + "<p>no attempt yet</p></body></html>\n";
  out += Summary(run, account) + Legend();

  out += TimelineHtml(run, account, {.id = "timeline", .axis = axis, .attempt = std::nullopt});
  // Each attempt again from its start to its first step (or end), where its phases are seen.
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    const AttemptTimeline& a = run.attempts[i];
    int64_t until = a.started_ns;
    for (const WorkerTimeline& w : a.workers) {
      for (const PhaseSegment& p : w.phases) until = std::max(until, p.end_ns.value_or(until));
      if (w.first_step_ns) until = std::max(until, *w.first_step_ns);
    }
    if (until == a.started_ns) continue;  // nothing recorded before its run
    out += fmt::format("<h2>attempt {}, from its start to its workers' first steps ({})</h2>\n",
                       a.number, ReportDuration(until - a.started_ns));
    out += TimelineHtml(
        run, account,
        {.id = fmt::format("attempt-{}", a.number), .axis = {a.started_ns, until}, .attempt = i});
  }
  out += std::string("<pre id=\"layout\" hidden></pre>\n<script>") + kScript +
         "</script>\n</body></html>\n";
  return out;
}

}  // namespace podrun
