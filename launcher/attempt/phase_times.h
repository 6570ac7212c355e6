// PhaseTimes: when each worker of an attempt began and ended each phase before the run (agents,
// sync, mounts, setup, start), recorded in the job store for `podrun report` (RunRecords'
// phases) whether or not a live line is drawn. A phase is written once, when it ends, in one
// transaction for all its workers (through AttemptRecorder); a worker that dropped out during
// it (its error set meanwhile) is marked failed there. Only the workers still in when a phase
// begins take part in it.
// Begin and End from the phases' thread; Done from any.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "launcher/attempt/attempt_worker.h"

namespace podrun {

class PhaseTimes {
 public:
  PhaseTimes(AttemptRecorder& recorder, const AttemptWorkers& workers)
      : recorder_(recorder), workers_(workers) {}
  // Records a phase still open (as End).
  ~PhaseTimes();
  PhaseTimes(const PhaseTimes&) = delete;
  PhaseTimes& operator=(const PhaseTimes&) = delete;

  // Phase `phase` begins now for the workers still in (a phase still open is ended first).
  void Begin(const std::string& phase);
  // Worker `index` is through the current phase now, or at `at_ns` (wall clock); a later Done
  // of the same worker replaces it. Ignored when no phase is open or the worker is not in it.
  void Done(int index, std::optional<int64_t> at_ns = std::nullopt);
  // Ends the current phase now and records it: a worker never Done ends now. Nothing when no
  // phase is open.
  void End();

 private:
  struct OpenPhase {
    std::string name;
    int64_t start_ns = 0;
    std::map<int, std::optional<int64_t>> ends;  // the workers in it: when each was through
  };

  AttemptRecorder& recorder_;
  const AttemptWorkers& workers_;
  std::mutex mutex_;
  std::optional<OpenPhase> open_;  // guarded by mutex_
};

}  // namespace podrun
