// See progress_watch.h.
#include "launcher/insight/progress_watch.h"

#include "launcher/store/job_store.h"

namespace podrun {

ProgressWatch::ProgressWatch(const JobSpec& spec, const std::vector<int>& workers,
                             std::function<void(const std::string&)> say, SaveFn save)
    : tracker_(
          spec.progress, workers,
          {.ratio = spec.straggler_ratio, .after = std::chrono::seconds(spec.straggler_seconds)}),
      say_(std::move(say)),
      save_(std::move(save)) {}

void ProgressWatch::Start() {
  if (!tracker_.enabled() || ticker_) return;
  ticker_.emplace(std::chrono::milliseconds(kCheckPeriod), [this] { Tick(); });
}

void ProgressWatch::Stop() {
  if (!ticker_) return;
  ticker_.reset();  // joined: no Tick runs from here on
  tracker_.Check(NowUnixNs());
  Save();
}

void ProgressWatch::Tick() {
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
