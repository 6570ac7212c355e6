// One timeline of the report page (see timeline_html.h): rows of absolutely positioned divs,
// placed by percentages of the time axis so that the page fits any window.
#include "launcher/insight/timeline_html.h"

#include <algorithm>
#include <set>
#include <vector>

#include "launcher/insight/report_html.h"
#include "launcher/insight/report_text.h"
#include "launcher/output/time_format.h"

namespace podrun {
namespace {

// Workers up to which a row is tall enough for its label; beyond, rows are thin.
constexpr size_t kLabelledRows = 40;
// Of thin rows, every this many is labelled.
constexpr int kDenseLabelEvery = 25;

using Axis = TimelineAxis;

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

// The step samples as a line over the steps band: time across, step up.
std::string Sparkline(const Axis& axis, const std::vector<StepSample>& samples) {
  if (samples.size() < 2 || samples.back().time_ns <= samples.front().time_ns) return "";
  const auto [low, high] = std::minmax_element(
      samples.begin(), samples.end(), [](const auto& x, const auto& y) { return x.step < y.step; });
  const double span_t = static_cast<double>(samples.back().time_ns - samples.front().time_ns);
  const double span_s = std::max<double>(1, static_cast<double>(high->step - low->step));
  std::string points;
  for (const StepSample& s : samples) {
    points +=
        fmt::format("{:.1f},{:.1f} ",
                    1000.0 * static_cast<double>(s.time_ns - samples.front().time_ns) / span_t,
                    100.0 - 100.0 * static_cast<double>(s.step - low->step) / span_s);
  }
  return fmt::format(
      "<svg class=\"spark\" style=\"{}\" viewBox=\"0 0 1000 100\" preserveAspectRatio=\"none\">"
      "<polyline points=\"{}\"/></svg>",
      axis.Box(samples.front().time_ns, samples.back().time_ns), points);
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
    if (w.straggler || (rate && median && *median > 0 && *rate < 0.5 * *median)) {
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
                    w.straggler ? "; straggler: " + w.straggler->Text() : ""));
    out += Sparkline(axis, w.samples);
  }
  const int64_t ended = w.end_ns.value_or(attempt_end);
  const bool bad = w.state == WorkerState::kLost || w.state == WorkerState::kFailed ||
                   w.state == WorkerState::kStopped ||
                   (w.state == WorkerState::kExited && w.exit_code.value_or(0) != 0);
  if (bad && ended >= axis.t0 && ended <= axis.t1) {
    const char* cls = w.state == WorkerState::kLost      ? "end-lost"
                      : w.state == WorkerState::kStopped ? "end-stopped"
                                                         : "end-failed";
    out += fmt::format("<div class=\"end {}\" style=\"left:{:.4f}%\" title=\"w{}: {}\"></div>", cls,
                       axis.Percent(ended), w.worker, HtmlEscape(WorkerEndText(w)));
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

// The axis's ticks, from 0 at the run's start, about ten of them.
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

// The markers' lines (and the recovery bands) over the rows, and their labels in a lane of
// their own: labels at one instant are joined, and a label that would run into the one before
// goes a level down.
struct MarkerLayers {
  std::string lines;
  std::string labels;
  int lane_px = 12;
};

MarkerLayers Markers(const Axis& axis, const RunTimeline& run) {
  struct Mark {
    int64_t t;
    const char* cls;
    std::string label;
  };
  std::vector<Mark> marks;
  MarkerLayers out;
  for (const AttemptTimeline& a : run.attempts) {
    marks.push_back({a.started_ns, "attempt",
                     fmt::format("attempt {} ({})", a.number, AttemptReasonName(a.reason))});
  }
  for (const RecoveryInterval& r : run.recoveries) {
    const int64_t back = r.back_ns.value_or(run.now_ns);
    out.lines += fmt::format("<div class=\"band\" style=\"{}\" title=\"{}\"></div>",
                             axis.Box(r.seen_ns, back),
                             HtmlEscape(fmt::format("{} {}: {} {}", r.node, r.state, r.what(),
                                                    ReportDuration(back - r.seen_ns))));
    marks.push_back({r.seen_ns, "preempt", r.node + " " + r.state});
    if (r.back_ns) marks.push_back({*r.back_ns, "back", r.node + " READY"});
  }
  std::stable_sort(marks.begin(), marks.end(),
                   [](const Mark& x, const Mark& y) { return x.t < y.t; });
  constexpr double kPercentPerChar = 0.5;  // about 6 px of a 1200 px axis
  constexpr size_t kLevels = 4;
  std::vector<double> level_end;  // where each level's last label ends (percent)
  for (size_t i = 0; i < marks.size();) {
    const double at = axis.Percent(marks[i].t);
    std::string label = marks[i].label;
    out.lines +=
        fmt::format("<div class=\"mark {}\" style=\"left:{:.4f}%\"></div>", marks[i].cls, at);
    size_t j = i + 1;
    for (; j < marks.size() && axis.Percent(marks[j].t) - at < 0.1; ++j) {
      out.lines +=
          fmt::format("<div class=\"mark {}\" style=\"left:{:.4f}%\"></div>", marks[j].cls, at);
      label += " · " + marks[j].label;
    }
    i = j;
    size_t level = 0;
    while (level < level_end.size() && level_end[level] > at) ++level;
    if (level == level_end.size()) {
      if (level_end.size() < kLevels) {
        level_end.push_back(0);
      } else {
        level = static_cast<size_t>(std::min_element(level_end.begin(), level_end.end()) -
                                    level_end.begin());
      }
    }
    level_end[level] = at + kPercentPerChar * static_cast<double>(label.size() + 2);
    out.labels += fmt::format("<div class=\"mlabel\" style=\"left:{:.4f}%;top:{}px\">{}</div>", at,
                              level * 12, HtmlEscape(label));
  }
  out.lane_px = static_cast<int>(std::max<size_t>(1, level_end.size()) * 12);
  return out;
}

}  // namespace

std::string TimelineHtml(const RunTimeline& run, const RunAccount& account,
                         const TimelineView& view) {
  const Axis& axis = view.axis;
  std::set<int> indexes;
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    if (view.attempt && *view.attempt != i) continue;
    for (const WorkerTimeline& w : run.attempts[i].workers) indexes.insert(w.worker);
  }
  const int row = indexes.size() <= kLabelledRows ? 18 : indexes.size() <= 120 ? 8 : 4;
  std::string out = fmt::format(
      "<div id=\"{}\" class=\"timeline{}\" style=\"--row:{}px\" data-start-ns=\"{}\" "
      "data-end-ns=\"{}\">\n",
      view.id, indexes.size() <= kLabelledRows ? "" : " dense", row, axis.t0, axis.t1);
  out += Ticks(axis);
  MarkerLayers markers;
  if (!view.attempt) {
    markers = Markers(axis, run);
    out += fmt::format("<div class=\"lane\" style=\"height:{}px\">{}</div>\n", markers.lane_px,
                       markers.labels) +
           RunRow(axis, run, account);
  }
  std::vector<std::optional<double>> medians;
  for (const AttemptTimeline& a : run.attempts) medians.push_back(MedianRate(a));
  for (int index : indexes) {
    std::string host;
    std::string segments;
    for (size_t i = 0; i < run.attempts.size(); ++i) {
      if (view.attempt && *view.attempt != i) continue;
      for (const WorkerTimeline& w : run.attempts[i].workers) {
        if (w.worker != index) continue;
        host = w.host;
        segments += WorkerSegments(axis, run.attempts[i], w, medians[i], run.now_ns);
      }
    }
    out += fmt::format(
        "<div class=\"row worker\" data-worker=\"{}\"><div class=\"label{}\" title=\"{}\">w{}</div>"
        "<div class=\"track\">{}</div></div>\n",
        index, index % kDenseLabelEvery == 0 ? " shown" : "", HtmlEscape(host), index, segments);
  }
  if (!view.attempt) out += "<div class=\"marks\">" + markers.lines + "</div>\n";
  return out + "</div>\n";
}

}  // namespace podrun
