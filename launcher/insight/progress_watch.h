// ProgressWatch: an attempt's StepTracker while the gang runs: every second it applies the
// straggler rules and says what they find, and every few seconds it hands the workers' changed
// progress and new step samples to `save` (the job store, in one transaction). Made with a
// disabled pattern (`progress: none`) it does nothing at all.
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
  static constexpr auto kCheckPeriod = std::chrono::seconds(1);
  static constexpr int kSaveEveryChecks = 3;

  // `say`: a message for the user (podrun's own line); `save`: where changes go.
  ProgressWatch(const JobSpec& spec, const std::vector<int>& workers,
                std::function<void(const std::string&)> say, SaveFn save);
  // Stops (saving what is left).
  ~ProgressWatch() { Stop(); }
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  StepTracker& tracker() { return tracker_; }
  // Starts the checks (once).
  void Start();
  // Ends the checks and saves the last changes; idempotent.
  void Stop();

 private:
  void Tick();
  void Save();

  StepTracker tracker_;
  std::function<void(const std::string&)> say_;
  SaveFn save_;
  int ticks_ = 0;                       // the ticker's
  std::optional<TickerThread> ticker_;  // last: stopped first
};

}  // namespace podrun
