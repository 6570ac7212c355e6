// `podrun report`'s text (see report_text.h).
#include "launcher/insight/report_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "launcher/base/exit_status.h"
#include "launcher/output/control_escape.h"
#include "launcher/output/time_format.h"
#include "launcher/pod/worker_range.h"

namespace podrun {
namespace {

constexpr size_t kEndGroups = 10;        // distinct ends shown per attempt in the summary
constexpr size_t kHangReportLines = 12;  // of a hang report

// The first line of a store text, its control characters shown escaped.
std::string Clean(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  std::string scratch;
  return std::string(EscapeControls(line, scratch));
}

const PhaseSegment* FailedPhase(const WorkerTimeline& w) {
  for (const PhaseSegment& p : w.phases) {
    if (p.failed) return &p;
  }
  return nullptr;
}

std::string PhaseText(const PhaseSegment& p, int64_t now_ns) {
  if (!p.end_ns)
    return fmt::format("{} {}+ (not ended)", p.phase, ReportDuration(now_ns - p.start_ns));
  return fmt::format("{} {}{}", p.phase, ReportDuration(*p.end_ns - p.start_ns),
                     p.failed ? " (failed)" : "");
}

std::string WorkerLine(const AttemptTimeline& a, const WorkerTimeline& w, int64_t now_ns) {
  std::vector<std::string> parts;
  for (const PhaseSegment& p : w.phases) parts.push_back(PhaseText(p, now_ns));
  if (w.first_step_ns) {
    parts.push_back(
        fmt::format("first step +{}", ReportDuration(*w.first_step_ns - FirstStepBase(a, w))));
    if (w.last_step_ns) {
      parts.push_back(fmt::format("steps {}{}", ReportDuration(*w.last_step_ns - *w.first_step_ns),
                                  w.last_step ? fmt::format(" (to step {})", *w.last_step) : ""));
    }
  }
  if (w.straggler) parts.push_back("straggler: " + w.straggler->Text());
  parts.push_back(WorkerEndText(w));
  std::string line = fmt::format("  w{:<4}", w.worker);
  for (size_t i = 0; i < parts.size(); ++i) line += (i ? " · " : "") + parts[i];
  return line + "\n";
}

// "1.2 s (w17 3.4 s)": the median of `values` (ns by worker) and the extreme one, the largest
// or (with `smallest`) the smallest.
std::string MedianAndExtreme(std::vector<std::pair<int64_t, int>> values, bool smallest,
                             const char* sign = "") {
  std::sort(values.begin(), values.end());
  const int64_t median = values[values.size() / 2].first;
  const auto& extreme = smallest ? values.front() : values.back();
  std::string out = sign + ReportDuration(median);
  if (values.size() > 1 && extreme.first != median) {
    out += fmt::format(" (w{} {}{})", extreme.second, sign, ReportDuration(extreme.first));
  }
  return out;
}

std::string AttemptSummary(const AttemptTimeline& a, int64_t now_ns) {
  std::map<std::string, std::vector<std::pair<int64_t, int>>> phases;
  std::vector<std::string> order;
  std::vector<std::pair<int64_t, int>> first_steps, steps;
  std::map<std::string, std::vector<int>> ends;
  std::vector<std::string> end_order;
  std::vector<std::string> stragglers;
  for (const WorkerTimeline& w : a.workers) {
    for (const PhaseSegment& p : w.phases) {
      if (!phases.count(p.phase)) order.push_back(p.phase);
      phases[p.phase].emplace_back(p.end_ns.value_or(now_ns) - p.start_ns, w.worker);
    }
    if (w.first_step_ns) {
      first_steps.emplace_back(*w.first_step_ns - FirstStepBase(a, w), w.worker);
      if (w.last_step_ns) steps.emplace_back(*w.last_step_ns - *w.first_step_ns, w.worker);
    }
    const std::string end = WorkerEndText(w);
    if (!ends.count(end)) end_order.push_back(end);
    ends[end].push_back(w.worker);
    if (w.straggler) {
      stragglers.push_back(fmt::format("w{} ({})", w.worker, w.straggler->Text()));
    }
  }
  std::vector<std::string> parts;
  for (const std::string& name : order) {
    parts.push_back(name + " " + MedianAndExtreme(phases[name], false));
  }
  if (!first_steps.empty()) {
    parts.push_back("first step " + MedianAndExtreme(first_steps, false, "+"));
  }
  if (!steps.empty()) parts.push_back("steps " + MedianAndExtreme(steps, true));
  std::string out = fmt::format("  {} workers (median, slowest):", a.workers.size());
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " · " : " ") + parts[i];
  out += "\n";
  for (size_t i = 0; i < end_order.size() && i < kEndGroups; ++i) {
    out += fmt::format("  w{}: {}\n", FormatWorkerRange(ends[end_order[i]]), end_order[i]);
  }
  if (end_order.size() > kEndGroups) {
    size_t more = 0;
    for (size_t i = kEndGroups; i < end_order.size(); ++i) more += ends[end_order[i]].size();
    out += fmt::format("  ... {} more worker{} with other ends (--all-workers shows each)\n", more,
                       more == 1 ? "" : "s");
  }
  if (!stragglers.empty()) {
    out += "  stragglers:";
    for (size_t i = 0; i < stragglers.size(); ++i) out += (i ? ", " : " ") + stragglers[i];
    out += "\n";
  }
  return out;
}

// The hang report kept with an attempt: its first lines, indented.
std::string HangReportLines(const HangReportRecord& report) {
  std::string out = fmt::format("  hang report, made {}:\n", FormatLocalTime(report.made_ns));
  size_t lines = 0, at = 0;
  while (at < report.text.size() && lines < kHangReportLines) {
    const size_t end = std::min(report.text.find('\n', at), report.text.size());
    out += "    " + Clean(report.text.substr(at, end - at)) + "\n";
    at = end + 1;
    ++lines;
  }
  if (at < report.text.size()) out += "    ... (all of it: podrun report --json)\n";
  return out;
}

std::string RecoveryLine(const RecoveryInterval& r, int64_t now_ns) {
  return fmt::format(
      "  then {} {} at {}: {}, {}\n", Clean(r.node), Clean(r.state), FormatLocalTime(r.seen_ns),
      r.what(),
      r.back_ns ? fmt::format("READY after {}", ReportDuration(*r.back_ns - r.seen_ns))
                : fmt::format("not READY yet ({} so far)", ReportDuration(now_ns - r.seen_ns)));
}

}  // namespace

std::string ReportDuration(int64_t ns) {
  if (ns < 0) ns = 0;
  if (ns > 0 && ns < 100'000'000) return fmt::format("{} ms", (ns + 500'000) / 1'000'000);
  if (ns < 60'000'000'000) return fmt::format("{:.1f} s", static_cast<double>(ns) / 1e9);
  return FormatDuration(ns);
}

std::string WorkerEndText(const WorkerTimeline& w) {
  const std::string error = Clean(w.error);
  const std::string why = error.empty() ? "" : ": " + error;
  switch (w.state) {
    case WorkerState::kExited:
      return "exited " + ShortExit(w.exit_code, w.signal);
    case WorkerState::kFailed:
      if (const PhaseSegment* p = FailedPhase(w)) return "failed in " + p->phase + why;
      return "failed: " + (error.empty() ? DescribeExit(w.exit_code, w.signal) : error);
    case WorkerState::kLost:
      return "lost" + why;
    case WorkerState::kStopped:
      return "stopped" + why;
    case WorkerState::kRunning:
      return "running";
    default:  // pending, connecting, prepared: its run never started
      if (const PhaseSegment* p = FailedPhase(w)) return "failed in " + p->phase + why;
      return fmt::format("not started ({}){}", WorkerStateName(w.state), why);
  }
}

std::string AttemptEndText(const AttemptTimeline& a) {
  const std::string state =
      a.state == AttemptState::kStartFailed ? "could not start" : AttemptStateName(a.state);
  const std::optional<LostCause> cause = LostCauseOf(a);
  std::string out = state;
  if (cause == LostCause::kPreemption || cause == LostCause::kHang) {
    out += fmt::format(" ({})", LostCauseName(*cause));
  }
  if (a.exit_code) out += fmt::format(", exit {}", *a.exit_code);
  if (!a.cause.empty()) out += ": " + Clean(a.cause);
  return out;
}

int64_t FirstStepBase(const AttemptTimeline& a, const WorkerTimeline& w) {
  int64_t base = w.start_ns.value_or(a.started_ns);
  for (const PhaseSegment& p : w.phases) {
    if (p.end_ns) base = std::max(base, *p.end_ns);
  }
  return base;
}

std::string FormatReportText(const RunTimeline& run, const RunAccount& account,
                             const ReportTextOptions& options) {
  std::string out =
      fmt::format("job {} ({})  pod {}  {} attempt{}\n", run.job_id, Clean(run.job_name),
                  Clean(run.pod), run.attempts.size(), run.attempts.size() == 1 ? "" : "s");
  for (const AttemptTimeline& a : run.attempts) {
    out += fmt::format("attempt {} ({}), started {}: {}, {}\n", a.number,
                       AttemptReasonName(a.reason), FormatLocalTime(a.started_ns),
                       ReportDuration(a.ended_ns.value_or(run.now_ns) - a.started_ns),
                       AttemptEndText(a));
    if (options.every_worker || a.workers.size() <= kReportWorkerLines) {
      for (const WorkerTimeline& w : a.workers) out += WorkerLine(a, w, run.now_ns);
    } else if (!a.workers.empty()) {
      out += AttemptSummary(a, run.now_ns);
    }
    if (a.hang_report) out += HangReportLines(*a.hang_report);
    for (const RecoveryInterval& r : run.recoveries) {
      if (r.after_attempt == a.number) out += RecoveryLine(r, run.now_ns);
    }
  }
  if (run.attempts.empty()) return out + "no attempt yet\n";
  if (account.stepped) {
    out += fmt::format("goodput {:.1f}% (steps {} of {} since the first launch)\n",
                       account.goodput * 100, ReportDuration(account.steps_ns),
                       ReportDuration(account.wall_ns));
  } else {
    out += fmt::format(
        "goodput: no steps recorded in {} (the spec's progress: regex finds them in the output)\n",
        ReportDuration(account.wall_ns));
  }
  int64_t lost = 0;
  std::string causes;
  for (size_t c = 0; c < kLostCauses; ++c) {
    lost += account.lost_ns[c];
    causes += fmt::format("{}{} {}", c ? " · " : "", LostCauseName(static_cast<LostCause>(c)),
                          ReportDuration(account.lost_ns[c]));
  }
  out += fmt::format("time lost {}: {}\n", ReportDuration(lost), causes);
  if (account.stepped) {
    std::string parts;
    for (const StartupPart& p : account.startup) {
      if (p.ns == 0 && p.part == "launch") continue;
      parts += fmt::format("{}{} {}", parts.empty() ? "" : " · ", p.part, ReportDuration(p.ns));
    }
    out += fmt::format("startup {}: {}\n", ReportDuration(account.startup_ns), parts);
  }
  out += fmt::format(
      "other {}{}\n", ReportDuration(account.other_ns),
      account.stepped ? " (after the last steps, or between attempts that ended well)" : "");
  return out;
}

}  // namespace podrun
