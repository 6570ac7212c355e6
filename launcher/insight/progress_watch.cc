// See progress_watch.h.
#include "launcher/insight/progress_watch.h"

#include "launcher/base/parallel_for.h"
#include "launcher/store/job_store.h"

namespace podrun {

ProgressWatch::ProgressWatch(const JobSpec& spec, const std::vector<int>& workers,
                             std::function<void(const std::string&)> say, FetchFn fetch,
                             SaveFn save)
    : tracker_(
          !spec.progress.empty(), workers,
          {.ratio = spec.straggler_ratio, .after = std::chrono::seconds(spec.straggler_seconds)}),
      workers_(workers),
      say_(std::move(say)),
      fetch_(std::move(fetch)),
      save_(std::move(save)) {}

void ProgressWatch::Start() {
  if (!tracker_.enabled() || ticker_) return;
  ticker_.emplace(std::chrono::milliseconds(kCheckPeriod), [this] { Tick(); });
}

void ProgressWatch::Ended(int worker, bool reachable) {
  if (!tracker_.enabled()) return;
  if (reachable && fetch_) fetch_(worker, tracker_);
  tracker_.Ended(worker);
}

void ProgressWatch::Stop() {
  if (!ticker_) return;
  ticker_.reset();  // joined: no Tick runs from here on
  tracker_.Check(NowUnixNs());
  Save();
}

void ProgressWatch::Tick() {
  if (fetch_) {
    std::vector<int> running;
    for (int worker : workers_) {
      if (!tracker_.IsEnded(worker)) running.push_back(worker);
    }
    ParallelFor(
        running.size(), [&](size_t i) { fetch_(running[i], tracker_); }, kFetchThreads);
  }
  for (const std::string& message : tracker_.Check(NowUnixNs())) say_(message);
  if (++ticks_ % kSaveEveryChecks == 0) Save();
}

void ProgressWatch::Save() {
  std::vector<WorkerProgress> progress;
  std::vector<StepSamplesUpdate> samples;
  tracker_.TakeChanges(&progress, &samples);
  if (!progress.empty() || !samples.empty()) save_(progress, samples);
}

}  // namespace podrun
