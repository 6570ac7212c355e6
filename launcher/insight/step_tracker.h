// StepTracker: each worker's step as its supervisor read it from the output (the worker's step
// record, agent_link's AgentSteps: docs/design.md decision 19), its step rate, and the straggler
// rule (docs/reference.md, "Seeing why"): a worker whose rate stays below straggler_ratio times
// the gang's median rate for straggler_seconds is a straggler; a worker whose step stops while
// another worker is past it is named at once. No line is read here: memory per worker is the
// worker's record (at most 64 recent points and 256 samples).
// Thread-safe: Update for different workers runs concurrently (a lock per worker).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/store/run_records.h"

namespace podrun {

struct StragglerRule {
  double ratio = 0.5;
  std::chrono::seconds after{120};
};

class StepTracker {
 public:
  // A worker behind another is named once it has not stepped for this long, or for five of the
  // gang's median step intervals if that is longer.
  static constexpr auto kBehindAfter = std::chrono::seconds(5);

  // `enabled`: the spec has a progress pattern (off: nothing is ever recorded or said).
  StepTracker(bool enabled, const std::vector<int>& workers, StragglerRule rule);

  bool enabled() const { return enabled_; }

  // `worker`'s step record as its supervisor keeps it now. `clock_offset_ns`: the worker's clock
  // minus the launcher's, so that step times compare across workers.
  void Update(int worker, const AgentSteps& steps, int64_t clock_offset_ns = 0);
  // The worker's process has ended: it is no longer compared with the others.
  void Ended(int worker);
  bool IsEnded(int worker) const;

  // Applies the rules at `now_ns` (the launcher's wall clock) and returns what to say: newly
  // flagged stragglers ("w5 is a straggler: 0.41 steps/s vs median 0.93"), those that are no
  // longer, and workers that stopped while another is past them.
  std::vector<std::string> Check(int64_t now_ns);

  // Every worker's progress (as of the last Check), by worker.
  std::vector<WorkerProgress> Progress() const;
  // The progress of workers changed since the last call, and their new step samples.
  void TakeChanges(std::vector<WorkerProgress>* progress, std::vector<StepSamplesUpdate>* samples);

 private:
  struct Point {
    int64_t time_ns;
    int64_t step;
  };
  struct Worker {
    mutable std::mutex mutex;
    std::vector<Point> window;  // the worker's recent points, oldest first
    std::vector<StepSample> samples;
    WorkerProgress progress;
    bool ended = false;
    bool changed = false;
    bool samples_changed = false;
    // The rules' state (Check's).
    std::optional<int64_t> below_since_ns;
    bool behind_named = false;
  };

  // Steps per second over the rate window ending at `now_ns`; nullopt when unknown.
  std::optional<double> Rate(const Worker& w, int64_t now_ns) const;

  const bool enabled_;
  const StragglerRule rule_;
  const int64_t window_ns_;
  std::map<int, std::unique_ptr<Worker>> workers_;  // fixed at construction
};

}  // namespace podrun
