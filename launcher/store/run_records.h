// RunRecords: the job store's record of how each attempt went, for `podrun report`, `status`,
// `top` and `ls` (docs/reference.md, "Seeing why"): each worker's phases, its step samples
// (thinned by the writer to a bounded count per worker and attempt), its latest step and rate,
// and the hang report kept with an attempt. Shares its JobStore's connection; the same threading
// rules apply (one object from one thread at a time). Errors as JobStore's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/store/job_store.h"
#include "launcher/store/store_database.h"

namespace podrun {

// One phase of one worker in one attempt: agents, sync, mounts, setup or start.
struct PhaseRecord {
  int worker = 0;
  std::string phase;
  int64_t start_ns = 0;
  std::optional<int64_t> end_ns;  // not ended (yet)
  bool failed = false;            // the worker failed in it
};

// A worker printed `step` at `time_ns` (its own clock).
struct StepSample {
  int64_t time_ns = 0;
  int64_t step = 0;
  bool operator==(const StepSample&) const = default;
};

// Why a worker is a straggler: its step rate and the gang's median when it was flagged.
struct StragglerNote {
  double steps_per_s = 0;
  double median_steps_per_s = 0;
  bool operator==(const StragglerNote&) const = default;
  // "0.41 steps/s vs median 0.93", for people.
  std::string Text() const;
};

// A worker's progress as last recorded.
struct WorkerProgress {
  int worker = 0;
  std::optional<int64_t> step;  // none seen yet
  std::optional<int64_t> step_ns;
  std::optional<int64_t> first_step_ns;
  std::optional<double> steps_per_s;       // its recent rate, when known
  std::optional<StragglerNote> straggler;  // set while it is flagged as a straggler
};

// New step samples of one worker: appended, or replacing all its samples of the attempt (after
// the writer thinned them).
struct StepSamplesUpdate {
  int worker = 0;
  bool replace = false;
  std::vector<StepSample> samples;
};

// The report made when an attempt's stall watch fired (`podrun why`'s, kept).
struct HangReportRecord {
  int64_t made_ns = 0;
  std::string text;  // as printed
  std::string json;  // as `podrun why --json` gives it
};

class RunRecords {
 public:
  explicit RunRecords(JobStore& store) : db_(store.database()) {}

  // Records (inserts or replaces) these phases of attempt `attempt`, in one transaction.
  void SetPhases(const std::string& job_id, int attempt, const std::vector<PhaseRecord>& phases);
  // The attempt's phases, by worker then start.
  std::vector<PhaseRecord> Phases(const std::string& job_id, int attempt);

  // Records the workers' progress and new step samples, in one transaction.
  void SaveProgress(const std::string& job_id, int attempt,
                    const std::vector<WorkerProgress>& progress,
                    const std::vector<StepSamplesUpdate>& samples);
  // Every worker's progress in the attempt (workers with no step too), by worker.
  std::vector<WorkerProgress> Progress(const std::string& job_id, int attempt);
  // Worker `worker`'s step samples in the attempt, oldest first.
  std::vector<StepSample> StepSamples(const std::string& job_id, int attempt, int worker);

  // Keeps `report` with the attempt (replacing one kept before).
  void SetHangReport(const std::string& job_id, int attempt, const HangReportRecord& report);
  std::optional<HangReportRecord> HangReport(const std::string& job_id, int attempt);

 private:
  StoreDatabase& db_;
};

}  // namespace podrun
