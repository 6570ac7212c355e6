// See step_cache.h.
#include "launcher/insight/step_cache.h"

#include <map>
#include <mutex>

#include "launcher/insight/step_tracker.h"
#include "launcher/spec/spec.h"

namespace podrun {

void CacheSteps(JobStore& store, const std::string& job_id, int attempt,
                const std::vector<FetchedSteps>& fetched, int64_t now_ns,
                std::chrono::seconds straggler_after) {
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
  for (WorkerProgress& p : progress) {
    if (auto it = stored.find(p.worker); it != stored.end()) p.straggler = it->second.straggler;
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
