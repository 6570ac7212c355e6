// ProgressWatch: an attempt's StepTracker while the gang runs. Every second it asks each worker
// still running for its step record (the worker's supervisor reads the steps from the output:
// docs/design.md decision 19; `fetch` makes the call and hands the record to the tracker),
// applies the straggler rules and says what they find, and every few seconds it hands the
// workers' changed progress and step samples to `save` (the job store, in one transaction).
// Made with `progress: none` it does nothing at all.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/insight/step_tracker.h"
#include "launcher/output/ticker_thread.h"
#include "launcher/spec/spec.h"

namespace podrun {

class ProgressWatch {
 public:
  using SaveFn = std::function<void(const std::vector<WorkerProgress>&,
                                    const std::vector<StepSamplesUpdate>&)>;
  // Asks worker `worker` for its step record and gives it to `tracker` (StepTracker::Update);
  // any error is the fetcher's to swallow (the next tick asks again). Called from the watch's
  // threads, for several workers at once.
  using FetchFn = std::function<void(int worker, StepTracker& tracker)>;
  static constexpr auto kCheckPeriod = std::chrono::seconds(1);
  static constexpr int kSaveEveryChecks = 3;
  static constexpr size_t kFetchThreads = 16;

  // `say`: a message for the user (podrun's own line); `save`: where changes go.
  ProgressWatch(const JobSpec& spec, const std::vector<int>& workers,
                std::function<void(const std::string&)> say, FetchFn fetch, SaveFn save);
  // Stops (saving what is left).
  ~ProgressWatch() { Stop(); }
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  StepTracker& tracker() { return tracker_; }
  // Starts the checks (once).
  void Start();
  // The worker's process has ended: its last record is fetched (`reachable`), then it is no
  // longer compared with the others nor asked again.
  void Ended(int worker, bool reachable);
  // Ends the checks and saves the last changes; idempotent.
  void Stop();

 private:
  void Tick();
  void Save();

  StepTracker tracker_;
  const std::vector<int> workers_;
  std::function<void(const std::string&)> say_;
  FetchFn fetch_;
  SaveFn save_;
  int ticks_ = 0;                       // the ticker's
  std::optional<TickerThread> ticker_;  // last: stopped first
};

}  // namespace podrun
