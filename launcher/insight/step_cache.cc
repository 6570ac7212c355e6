// See step_cache.h.
#include "launcher/insight/step_cache.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "launcher/insight/step_tracker.h"
#include "launcher/spec/spec.h"

namespace podrun {

namespace {

// `f`'s step at `at_ns` (the launcher's clock): the last point at or before it; nullopt when its
// record starts after it.
std::optional<int64_t> StepAt(const FetchedSteps& f, int64_t at_ns) {
  std::optional<std::pair<int64_t, int64_t>> best;  // (time, step)
  auto consider = [&](int64_t worker_time_ns, int64_t step) {
    const int64_t t = worker_time_ns - f.clock_offset_ns;
    if (t <= at_ns && (!best || t >= best->first)) best = {{t, step}};
  };
  for (const AgentStepPoint& p : f.steps.samples) consider(p.time_ns, p.step);
  for (const AgentStepPoint& p : f.steps.recent) consider(p.time_ns, p.step);
  if (f.steps.step) consider(f.steps.step_ns, *f.steps.step);
  if (!best) return std::nullopt;
  return best->second;
}

}  // namespace

std::map<int, std::optional<StragglerNote>> StragglersOf(const std::vector<FetchedSteps>& fetched,
                                                         int64_t now_ns,
                                                         const StragglerRule& rule) {
  const int64_t window_ns = std::chrono::nanoseconds(rule.after).count();
  std::map<int, double> rates;
  for (const FetchedSteps& f : fetched) {
    if (!f.steps.step || f.steps.first_step_ns - f.clock_offset_ns > now_ns - window_ns) continue;
    const std::optional<int64_t> start = StepAt(f, now_ns - window_ns);
    const std::optional<int64_t> end = StepAt(f, now_ns);
    if (!start || !end) continue;
    rates[f.worker] = static_cast<double>(*end - *start) * 1e9 / static_cast<double>(window_ns);
  }
  std::map<int, std::optional<StragglerNote>> out;
  if (rates.size() < 2) return out;
  std::vector<double> sorted;
  for (const auto& [w, r] : rates) sorted.push_back(r);
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  for (const auto& [w, r] : rates) {
    out[w] = median > 0 && r < rule.ratio * median
                 ? std::optional<StragglerNote>(
                       StragglerNote{.steps_per_s = r, .median_steps_per_s = median})
                 : std::nullopt;
  }
  return out;
}

StragglerRule StragglerRuleOf(const JobRecord& job) {
  try {
    const JobSpec spec = ParseRecordedSpec(job.spec_text, job.spec_path);
    return {.ratio = spec.straggler_ratio, .after = std::chrono::seconds(spec.straggler_seconds)};
  } catch (const Error&) {
    return {};
  }
}

void CacheSteps(JobStore& store, const std::string& job_id, int attempt,
                const std::vector<FetchedSteps>& fetched, int64_t now_ns,
                std::chrono::seconds straggler_after,
                const std::optional<StragglerRule>& driverless) {
  if (fetched.empty()) return;
  std::vector<int> workers;
  for (const FetchedSteps& f : fetched) workers.push_back(f.worker);
  // The tracker's arithmetic (the step in the launcher's clock, the rate over its window).
  StepTracker tracker(true, workers, {.ratio = 0, .after = straggler_after});
  for (const FetchedSteps& f : fetched) tracker.Update(f.worker, f.steps, f.clock_offset_ns);
  tracker.Check(now_ns);
  std::vector<WorkerProgress> progress;
  std::vector<StepSamplesUpdate> samples;
  tracker.TakeChanges(&progress, &samples);
  RunRecords records(store);
  std::map<int, WorkerProgress> stored;
  for (WorkerProgress& p : records.Progress(job_id, attempt)) stored[p.worker] = p;
  std::map<int, std::optional<StragglerNote>> computed;
  if (driverless) computed = StragglersOf(fetched, now_ns, *driverless);
  for (WorkerProgress& p : progress) {
    if (auto it = computed.find(p.worker); it != computed.end()) {
      p.straggler = it->second;
    } else if (auto kept = stored.find(p.worker); kept != stored.end()) {
      p.straggler = kept->second.straggler;
    }
  }
  records.SaveProgress(job_id, attempt, progress, samples);
}

std::chrono::seconds StragglerAfter(const JobRecord& job) {
  try {
    return std::chrono::seconds(ParseSpecText(job.spec_text, job.spec_path).straggler_seconds);
  } catch (const Error&) {
    return std::chrono::seconds(JobSpec{}.straggler_seconds);  // a spec this podrun cannot read
  }
}

void RefreshSteps(JobStore& store, const JobRecord& job, int attempt, JobAgents& agents) {
  std::vector<FetchedSteps> fetched;
  std::mutex mutex;
  agents.ForEachReachable([&](JobAgent& agent) {
    try {
      if (auto steps = agent.client->Steps(job.id, static_cast<uint32_t>(attempt))) {
        std::lock_guard lock(mutex);
        fetched.push_back({agent.index, std::move(*steps), agent.clock_offset_ns});
      }
    } catch (const std::exception&) {
      // Out of reach now: the store's record stands.
    }
  });
  CacheSteps(store, job.id, attempt, fetched, NowUnixNs(), StragglerAfter(job));
}

}  // namespace podrun
