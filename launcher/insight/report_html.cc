// `podrun report --html` (see report_html.h). Positions are percentages of the time axis, so the
// page fits any window; the elements are absolutely positioned divs.
#include "launcher/insight/report_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "launcher/insight/report_text.h"
#include "launcher/output/time_format.h"

namespace podrun {
namespace {

// Workers up to which a row is tall enough for its label; beyond, rows are thin.
constexpr size_t kLabelledRows = 40;

constexpr const char* kCss = R"css(
:root{--label:72px}
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:18px;margin:0 0 4px}
.summary span{margin-right:16px;white-space:nowrap}
.legend{margin:10px 0;display:flex;flex-wrap:wrap;gap:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px}
.timeline{position:relative;margin:8px 0 16px}
.lane{position:relative;height:16px;margin-left:var(--label)}
.row{display:flex;height:var(--row)}
.row .label{width:var(--label);flex:none;font-size:11px;line-height:var(--row);overflow:hidden;
 white-space:nowrap}
.dense .row .label{font-size:0}
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
.band{position:absolute;top:32px;bottom:0;background:rgba(200,0,0,.10)}
.tick{position:absolute;top:0;height:16px;font-size:10px;color:#666;border-left:1px solid #bbb;
 padding-left:2px;white-space:nowrap}
.mlabel{position:absolute;font-size:10px;white-space:nowrap;padding:0 2px;background:#fff}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 10px 2px 0;text-align:left}
)css";

constexpr const char* kScript = R"js(
(function(){
if(!/[?&]measure/.test(location.search))return;
var tl=document.getElementById('timeline');
var tr=document.querySelector('.row.worker .track').getBoundingClientRect();
var out={start_ns:tl.dataset.startNs,end_ns:tl.dataset.endNs,track:{x:tr.left,width:tr.width},
 elements:[]};
document.querySelectorAll('[data-phase]').forEach(function(e){var r=e.getBoundingClientRect();
 out.elements.push({worker:e.dataset.worker,attempt:e.dataset.attempt,phase:e.dataset.phase,
  start_ns:e.dataset.startNs,end_ns:e.dataset.endNs,x:r.left,y:r.top,width:r.width,
  height:r.height});});
document.getElementById('layout').textContent=JSON.stringify(out);
})();
)js";

struct Axis {
  int64_t t0 = 0;
  int64_t t1 = 1;
  double Percent(int64_t t) const {
    return 100.0 * static_cast<double>(std::clamp(t, t0, t1) - t0) / static_cast<double>(t1 - t0);
  }
  std::string Box(int64_t from, int64_t to) const {
    const double left = Percent(from);
    return fmt::format("left:{:.4f}%;width:{:.4f}%", left, std::max(0.0, Percent(to) - left));
  }
};

// A segment of worker `worker`'s row: class, data attributes, position and tooltip.
std::string Segment(const Axis& axis, const std::string& cls, int worker, int attempt,
                    const std::string& phase, int64_t from, int64_t to, const std::string& title) {
  return fmt::format(
      "<div class=\"seg {}\" data-worker=\"{}\" data-attempt=\"{}\" data-phase=\"{}\" "
      "data-start-ns=\"{}\" data-end-ns=\"{}\" style=\"{}\" title=\"{}\"></div>",
      HtmlEscape(cls), worker, attempt, HtmlEscape(phase), from, to, axis.Box(from, to),
      HtmlEscape(title));
}

// The worker's step rate in the attempt: from its samples, else as recorded; none if unknown.
std::optional<double> Rate(const WorkerTimeline& w) {
  if (w.samples.size() >= 2 && w.samples.back().time_ns > w.samples.front().time_ns) {
    return static_cast<double>(w.samples.back().step - w.samples.front().step) * 1e9 /
           static_cast<double>(w.samples.back().time_ns - w.samples.front().time_ns);
  }
  return w.steps_per_s;
}

std::optional<double> MedianRate(const AttemptTimeline& a) {
  std::vector<double> rates;
  for (const WorkerTimeline& w : a.workers) {
    if (auto r = Rate(w)) rates.push_back(*r);
  }
  if (rates.empty()) return std::nullopt;
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

std::string WorkerSegments(const Axis& axis, const AttemptTimeline& a, const WorkerTimeline& w,
                           std::optional<double> median, int64_t now_ns) {
  std::string out;
  const int64_t attempt_end = a.ended_ns.value_or(now_ns);
  for (const PhaseSegment& p : w.phases) {
    const int64_t end = p.end_ns.value_or(attempt_end);
    out += Segment(axis, p.phase + (p.failed ? " failed" : ""), w.worker, a.number, p.phase,
                   p.start_ns, end,
                   fmt::format("w{} attempt {}: {} {}{}{}", w.worker, a.number, p.phase,
                               ReportDuration(end - p.start_ns), p.end_ns ? "" : " (not ended)",
                               p.failed ? " (failed: " + w.error + ")" : ""));
  }
  if (w.first_step_ns) {
    const int64_t base = FirstStepBase(a, w);
    if (*w.first_step_ns > base) {
      out += Segment(axis, "wait", w.worker, a.number, "first-step", base, *w.first_step_ns,
                     fmt::format("w{} attempt {}: first step after {}", w.worker, a.number,
                                 ReportDuration(*w.first_step_ns - base)));
    }
    const int64_t last = std::max(w.last_step_ns.value_or(*w.first_step_ns), *w.first_step_ns);
    const std::optional<double> rate = Rate(w);
    std::string cls = "steps-ok";
    if (!w.straggler.empty() || (rate && median && *median > 0 && *rate < 0.5 * *median)) {
      cls = "steps-straggler";
    } else if (rate && median && *median > 0 && *rate < 0.9 * *median) {
      cls = "steps-slow";
    }
    out += Segment(
        axis, cls, w.worker, a.number, "steps", *w.first_step_ns, last,
        fmt::format("w{} attempt {}: steps {}{}{}{}", w.worker, a.number,
                    ReportDuration(last - *w.first_step_ns),
                    w.last_step ? fmt::format(", to step {}", *w.last_step) : "",
                    rate ? fmt::format(", {:.3g} steps/s{}", *rate,
                                       median ? fmt::format(" (median {:.3g})", *median) : "")
                         : "",
                    w.straggler.empty() ? "" : "; straggler: " + w.straggler));
  }
  if (w.state == WorkerState::kLost || w.state == WorkerState::kFailed ||
      w.state == WorkerState::kStopped ||
      (w.state == WorkerState::kExited && w.exit_code.value_or(0) != 0)) {
    const char* cls = w.state == WorkerState::kLost      ? "end-lost"
                      : w.state == WorkerState::kStopped ? "end-stopped"
                                                         : "end-failed";
    out += fmt::format("<div class=\"end {}\" style=\"left:{:.4f}%\" title=\"w{}: {}\"></div>", cls,
                       axis.Percent(w.end_ns.value_or(attempt_end)), w.worker,
                       HtmlEscape(WorkerEndText(w)));
  }
  return out;
}

// The "run" row: per attempt its startup (the first) and steps, and the time lost by cause.
std::string RunRow(const Axis& axis, const RunTimeline& run, const RunAccount& account) {
  std::string out = "<div class=\"row run\"><div class=\"label\">run</div><div class=\"track\">";
  auto seg = [&](const std::string& cls, int64_t from, int64_t to, const std::string& title) {
    out += fmt::format("<div class=\"seg {}\" data-kind=\"{}\" style=\"{}\" title=\"{}\"></div>",
                       cls, cls, axis.Box(from, to), HtmlEscape(title));
  };
  if (account.startup_ns > 0) {
    seg("startup", account.start_ns, account.start_ns + account.startup_ns,
        "startup " + ReportDuration(account.startup_ns));
  }
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    if (const auto& s = account.steps[i]) {
      seg("steps-run", s->first_ns, s->last_ns,
          fmt::format("attempt {}: steps {}", run.attempts[i].number,
                      ReportDuration(s->last_ns - s->first_ns)));
    }
  }
  for (const LostInterval& l : account.lost) {
    seg(std::string("lost-") + LostCauseName(l.cause), l.from_ns, l.to_ns,
        fmt::format("lost to {} after attempt {}: {}", LostCauseName(l.cause), l.attempt,
                    ReportDuration(l.to_ns - l.from_ns)));
  }
  return out + "</div></div>\n";
}

// The axis's ticks, and the markers: attempts' starts, preemptions, the pod's recovery.
std::string Ticks(const Axis& axis) {
  constexpr int64_t kS = 1'000'000'000;
  const int64_t steps[] = {kS,        2 * kS,    5 * kS,     10 * kS,    15 * kS,   30 * kS,
                           60 * kS,   120 * kS,  300 * kS,   600 * kS,   900 * kS,  1800 * kS,
                           3600 * kS, 7200 * kS, 21600 * kS, 43200 * kS, 86400 * kS};
  int64_t step = steps[std::size(steps) - 1];
  for (int64_t s : steps) {
    if ((axis.t1 - axis.t0) / s <= 10) {
      step = s;
      break;
    }
  }
  std::string out = "<div class=\"lane axis\">";
  for (int64_t t = 0; axis.t0 + t <= axis.t1; t += step) {
    out += fmt::format("<div class=\"tick\" style=\"left:{:.4f}%\">{}</div>",
                       axis.Percent(axis.t0 + t), t == 0 ? "0" : "+" + FormatDuration(t));
  }
  return out + "</div>\n";
}

std::string Markers(const Axis& axis, const RunTimeline& run, std::string* labels) {
  std::string lines;
  int n = 0;
  auto mark = [&](const char* cls, int64_t t, const std::string& label) {
    const double at = axis.Percent(t);
    lines += fmt::format("<div class=\"mark {}\" style=\"left:{:.4f}%\"></div>", cls, at);
    *labels += fmt::format("<div class=\"mlabel\" style=\"left:{:.4f}%;top:{}px\">{}</div>", at,
                           (n++ % 2) * 8, HtmlEscape(label));
  };
  for (const AttemptTimeline& a : run.attempts) {
    mark("attempt", a.started_ns,
         fmt::format("attempt {} ({})", a.number, AttemptReasonName(a.reason)));
  }
  for (const RecoveryInterval& r : run.recoveries) {
    const int64_t back = r.back_ns.value_or(run.now_ns);
    lines += fmt::format("<div class=\"band\" style=\"{}\" title=\"{}\"></div>",
                         axis.Box(r.seen_ns, back),
                         HtmlEscape(fmt::format("{} {}: {} {}", r.node, r.state, r.what(),
                                                ReportDuration(back - r.seen_ns))));
    mark("preempt", r.seen_ns, r.node + " " + r.state);
    if (r.back_ns) mark("back", *r.back_ns, r.node + " READY");
  }
  return "<div class=\"marks\">" + lines + "</div>\n";
}

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
  return out + "</table>\n";
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
  Axis axis{account.start_ns, std::max(account.end_ns, account.start_ns + 1)};
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

  std::set<int> indexes;
  for (const AttemptTimeline& a : run.attempts) {
    for (const WorkerTimeline& w : a.workers) indexes.insert(w.worker);
  }
  const int row = indexes.size() <= kLabelledRows ? 18 : indexes.size() <= 120 ? 8 : 4;
  std::string labels;
  const std::string markers = Markers(axis, run, &labels);
  out += fmt::format(
      "<div id=\"timeline\" class=\"timeline{}\" style=\"--row:{}px\" data-start-ns=\"{}\" "
      "data-end-ns=\"{}\">\n",
      indexes.size() <= kLabelledRows ? "" : " dense", row, axis.t0, axis.t1);
  out += Ticks(axis) + "<div class=\"lane\">" + labels + "</div>\n" + RunRow(axis, run, account);
  std::vector<std::optional<double>> medians;
  for (const AttemptTimeline& a : run.attempts) medians.push_back(MedianRate(a));
  for (int index : indexes) {
    std::string host;
    std::string segments;
    for (size_t i = 0; i < run.attempts.size(); ++i) {
      for (const WorkerTimeline& w : run.attempts[i].workers) {
        if (w.worker != index) continue;
        host = w.host;
        segments += WorkerSegments(axis, run.attempts[i], w, medians[i], run.now_ns);
      }
    }
    out += fmt::format(
        "<div class=\"row worker\" data-worker=\"{}\"><div class=\"label\" title=\"{}\">w{}</div>"
        "<div class=\"track\">{}</div></div>\n",
        index, HtmlEscape(host), index, segments);
  }
  out += markers + "</div>\n<pre id=\"layout\" hidden></pre>\n<script>" + kScript +
         "</script>\n</body></html>\n";
  return out;
}

}  // namespace podrun
