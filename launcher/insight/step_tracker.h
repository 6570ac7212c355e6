// StepTracker: each worker's step, read from its output with the spec's `progress:` pattern
// (spec/progress_pattern.h), its step rate, and the straggler rule (docs/reference.md, "Seeing
// why"): a worker whose rate stays below straggler_ratio times the gang's median rate for
// straggler_seconds is a straggler; a worker whose step stops while another worker is past it
// is named at once. Memory per worker is bounded (a partial line of at most kLineBytes, a rate
// window of at most kWindowPoints points, StepThinning's samples), whatever the output.
// Thread-safe: Add for different workers runs concurrently (a lock per worker).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/insight/step_thinning.h"
#include "launcher/spec/progress_pattern.h"
#include "launcher/store/run_records.h"
#include "proto/log_record.h"

namespace podrun {

struct StragglerRule {
  double ratio = 0.5;
  std::chrono::seconds after{120};
};

class StepTracker {
 public:
  static constexpr size_t kLineBytes = 1024;   // of each line, what the pattern sees
  static constexpr size_t kWindowPoints = 64;  // points kept for a worker's rate
  // A worker behind another is named once it has not stepped for this long, or for five of the
  // gang's median step intervals if that is longer.
  static constexpr auto kBehindAfter = std::chrono::seconds(5);

  // `pattern`: the spec's progress (empty: off; then nothing is ever recorded or said).
  // Throws std::invalid_argument for a bad pattern (the spec parser has checked it).
  StepTracker(const std::string& pattern, const std::vector<int>& workers, StragglerRule rule);

  bool enabled() const { return pattern_.enabled(); }

  // A batch of `worker`'s records, in order. `clock_offset_ns`: the worker's clock minus the
  // launcher's, so that step times compare across workers.
  void Add(int worker, const std::vector<LogRecord>& records, int64_t clock_offset_ns = 0);
  // The worker's process has ended: it is no longer compared with the others.
  void Ended(int worker);

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
    std::string line;       // the current line's start (at most kLineBytes)
    bool line_cut = false;  // the current line is longer: the rest is not looked at
    std::deque<Point> window;
    StepThinning thinning;
    WorkerProgress progress;
    bool ended = false;
    bool changed = false;
    // The rules' state (Check's).
    std::optional<int64_t> below_since_ns;
    bool behind_named = false;
  };

  void Line(Worker& w, int64_t time_ns);
  void Stepped(Worker& w, int64_t time_ns, int64_t step);
  // Steps per second over the rate window ending at `now_ns`; nullopt when unknown.
  std::optional<double> Rate(const Worker& w, int64_t now_ns) const;

  ProgressPattern pattern_;
  const StragglerRule rule_;
  const int64_t window_ns_;
  std::map<int, std::unique_ptr<Worker>> workers_;  // fixed at construction
};

}  // namespace podrun
