// A run's timeline from the store, and its account (see run_timeline.h for the rules).
#include "launcher/insight/run_timeline.h"

#include <algorithm>
#include <map>

#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

// The phases in the order they run.
constexpr const char* kPhaseOrder[] = {"agents", "sync", "mounts", "setup", "start"};

int PhaseRank(const std::string& phase) {
  for (size_t i = 0; i < std::size(kPhaseOrder); ++i) {
    if (phase == kPhaseOrder[i]) return static_cast<int>(i);
  }
  return static_cast<int>(std::size(kPhaseOrder));
}

int64_t Clamp(int64_t t, int64_t lo, int64_t hi) { return std::max(lo, std::min(t, hi)); }

int64_t EndOr(const AttemptTimeline& a, int64_t now_ns) { return a.ended_ns.value_or(now_ns); }

// The startup parts of attempt `a` up to `first_step_ns` (see the header's rule).
std::vector<StartupPart> StartupParts(const AttemptTimeline& a, int64_t first_step_ns) {
  struct Span {
    int64_t start = INT64_MAX;
    int64_t end = INT64_MIN;
  };
  std::map<int, std::pair<std::string, Span>> spans;  // by rank
  for (const WorkerTimeline& w : a.workers) {
    for (const PhaseSegment& p : w.phases) {
      auto& [name, span] = spans[PhaseRank(p.phase)];
      name = p.phase;
      span.start = std::min(span.start, p.start_ns);
      span.end = std::max(span.end, p.end_ns.value_or(first_step_ns));
    }
  }
  std::vector<StartupPart> parts;
  int64_t cursor = a.started_ns;
  const int64_t limit = std::max(first_step_ns, a.started_ns);
  // The node the launch created, before the attempt began.
  for (const PhaseSegment& p : a.provisioning) {
    cursor = std::min(cursor, p.start_ns);
  }
  for (const PhaseSegment& p : a.provisioning) {
    const int64_t end = Clamp(p.end_ns.value_or(a.started_ns), cursor, limit);
    parts.push_back({p.phase, end - cursor});
    cursor = end;
  }
  const int64_t launch_end =
      spans.empty() ? cursor : Clamp(spans.begin()->second.second.start, cursor, limit);
  parts.push_back({"launch", launch_end - cursor});
  cursor = launch_end;
  for (const auto& [rank, named] : spans) {
    const int64_t end = Clamp(named.second.end, cursor, limit);
    parts.push_back({named.first, end - cursor});
    cursor = end;
  }
  parts.push_back({"first step", limit - cursor});
  return parts;
}

}  // namespace

const char* LostCauseName(LostCause cause) {
  switch (cause) {
    case LostCause::kPreemption:
      return "preemption";
    case LostCause::kHang:
      return "hang";
    case LostCause::kFailure:
      return "failure";
    case LostCause::kStop:
      return "stop";
  }
  return "failure";
}

std::optional<LostCause> LostCauseOf(const AttemptTimeline& attempt) {
  switch (attempt.ended_by) {
    case AttemptEnd::kPreemption:
      return LostCause::kPreemption;
    case AttemptEnd::kHang:
      return LostCause::kHang;
    case AttemptEnd::kFailure:
      return LostCause::kFailure;
    case AttemptEnd::kNone:
      break;
  }
  switch (attempt.state) {
    case AttemptState::kStopped:
      return LostCause::kStop;
    case AttemptState::kFailed:
    case AttemptState::kStartFailed:
      return LostCause::kFailure;
    default:
      return std::nullopt;
  }
}

std::optional<StepSpan> AttemptSteps(const AttemptTimeline& attempt, int64_t now_ns) {
  std::optional<int64_t> first, last;
  auto widen = [&](std::optional<int64_t> f, std::optional<int64_t> l) {
    if (f) first = first ? std::min(*first, *f) : *f;
    if (l) last = last ? std::max(*last, *l) : *l;
  };
  for (const WorkerTimeline& w : attempt.workers) {
    widen(w.first_step_ns, w.last_step_ns);
    if (!w.samples.empty()) widen(w.samples.front().time_ns, w.samples.back().time_ns);
  }
  if (!first) return std::nullopt;
  if (!last) last = first;
  const int64_t lo = attempt.started_ns;
  const int64_t hi = std::max(lo, EndOr(attempt, now_ns));
  StepSpan span{Clamp(*first, lo, hi), Clamp(*last, lo, hi)};
  span.last_ns = std::max(span.last_ns, span.first_ns);
  return span;
}

RunAccount AccountRun(const RunTimeline& run) {
  RunAccount account;
  if (run.attempts.empty()) return account;
  account.start_ns = run.attempts.front().started_ns;
  for (const PhaseSegment& p : run.attempts.front().provisioning) {
    account.start_ns = std::min(account.start_ns, p.start_ns);
  }
  account.end_ns = std::max(account.start_ns, EndOr(run.attempts.back(), run.now_ns));
  account.wall_ns = account.end_ns - account.start_ns;

  for (const AttemptTimeline& a : run.attempts) {
    account.steps.push_back(AttemptSteps(a, run.now_ns));
    if (const auto& s = account.steps.back()) {
      account.stepped = true;
      account.steps_ns += s->last_ns - s->first_ns;
    }
  }
  account.goodput =
      account.wall_ns > 0 ? static_cast<double>(account.steps_ns) / account.wall_ns : 0.0;

  int64_t lost_until = account.start_ns;  // where the last lost interval ended
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    const AttemptTimeline& a = run.attempts[i];
    const std::optional<LostCause> cause = LostCauseOf(a);
    if (!cause) continue;
    int64_t from = account.steps[i] ? account.steps[i]->last_ns : a.started_ns;
    int64_t to = account.end_ns;
    if (i + 1 < run.attempts.size()) {
      const AttemptTimeline& next = run.attempts[i + 1];
      to = account.steps[i + 1] ? account.steps[i + 1]->first_ns : EndOr(next, run.now_ns);
    }
    from = Clamp(std::max(from, lost_until), account.start_ns, account.end_ns);
    to = Clamp(to, from, account.end_ns);
    if (to == from) continue;
    account.lost.push_back({a.number, *cause, from, to});
    account.lost_ns[static_cast<size_t>(*cause)] += to - from;
    lost_until = to;
  }

  if (account.steps.front()) {
    const AttemptTimeline& first = run.attempts.front();
    account.startup = StartupParts(first, account.steps.front()->first_ns);
    account.startup_ns = account.steps.front()->first_ns - account.start_ns;
  }

  int64_t lost_ns = 0;
  for (int64_t ns : account.lost_ns) lost_ns += ns;
  account.other_ns =
      std::max<int64_t>(0, account.wall_ns - account.steps_ns - account.startup_ns - lost_ns);
  return account;
}

RunTimeline LoadRunTimeline(JobStore& store, const JobRecord& job, int64_t now_ns) {
  RunTimeline run;
  run.job_id = job.id;
  run.job_name = job.name;
  run.pod = job.pod;
  run.now_ns = now_ns;
  RunRecords records(store);
  for (const AttemptRecord& a : store.Attempts(job.id)) {
    AttemptTimeline at;
    at.number = a.number;
    at.reason = a.reason;
    at.started_ns = a.started_ns;
    at.ended_ns = a.ended_ns;
    at.state = a.state;
    at.ended_by = a.ended_by;
    at.cause = a.cause;
    at.exit_code = a.exit_code;
    at.hang_report = records.HangReport(job.id, a.number);
    std::map<int, std::vector<PhaseSegment>> phases;
    for (const PhaseRecord& p : records.Phases(job.id, a.number)) {
      phases[p.worker].push_back({p.phase, p.start_ns, p.end_ns, p.failed});
    }
    if (auto pod = phases.find(-1); pod != phases.end()) at.provisioning = std::move(pod->second);
    std::map<int, WorkerProgress> progress;
    for (const WorkerProgress& p : records.Progress(job.id, a.number)) progress[p.worker] = p;
    for (const WorkerRecord& w : store.Workers(job.id, a.number)) {
      WorkerTimeline wt;
      wt.worker = w.index;
      wt.host = w.host;
      wt.phases = std::move(phases[w.index]);
      std::stable_sort(wt.phases.begin(), wt.phases.end(), [](const auto& x, const auto& y) {
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns
                                        : PhaseRank(x.phase) < PhaseRank(y.phase);
      });
      if (auto it = progress.find(w.index); it != progress.end()) {
        wt.first_step_ns = it->second.first_step_ns;
        wt.last_step_ns = it->second.step_ns;
        wt.last_step = it->second.step;
        wt.steps_per_s = it->second.steps_per_s;
        wt.straggler = it->second.straggler;
      }
      wt.samples = records.StepSamples(job.id, a.number, w.index);
      if (!wt.samples.empty()) {
        if (!wt.first_step_ns) wt.first_step_ns = wt.samples.front().time_ns;
        if (!wt.last_step_ns || *wt.last_step_ns < wt.samples.back().time_ns) {
          wt.last_step_ns = wt.samples.back().time_ns;
          wt.last_step = wt.samples.back().step;
        }
      }
      wt.state = w.state;
      wt.exit_code = w.exit_code;
      wt.signal = w.signal;
      wt.start_ns = w.start_ns;
      wt.end_ns = w.end_ns;
      wt.error = w.error;
      at.workers.push_back(std::move(wt));
    }
    run.attempts.push_back(std::move(at));
  }
  for (const PreemptionRecord& p : RecoveryRecords(store).Preemptions(job.id)) {
    run.recoveries.push_back({p.attempt, p.node, p.state, p.seen_ns, p.back_ns, p.recreated});
  }
  return run;
}

}  // namespace podrun
