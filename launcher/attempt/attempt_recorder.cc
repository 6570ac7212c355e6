// The attempt's record in the job store, written from the attempt's threads.
#include <fmt/format.h>

#include "launcher/attempt/attempt_worker.h"
#include "launcher/base/error.h"
#include "launcher/output/say.h"

namespace podrun {

template <typename Write>
void AttemptRecorder::Guarded(const Write& write) {
  std::lock_guard lock(mutex_);
  try {
    write();
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
}

void AttemptRecorder::UpdateWorker(int index, const WorkerUpdate& update) {
  Guarded([&] { store_.UpdateWorker(plan_.job.id, plan_.attempt, index, update); });
}

void AttemptRecorder::SetAttempt(AttemptState state, std::optional<int> exit_code, bool ended) {
  Guarded([&] {
    store_.SetAttemptState(plan_.job.id, plan_.attempt, state, exit_code,
                           ended ? std::optional<int64_t>(NowUnixNs()) : std::nullopt);
  });
}

void AttemptRecorder::SetCause(AttemptEnd end, const std::string& cause) {
  Guarded([&] { store_.SetAttemptEnd(plan_.job.id, plan_.attempt, end, cause); });
}

void AttemptRecorder::SetPhases(const std::vector<PhaseRecord>& phases) {
  Guarded([&] { RunRecords(store_).SetPhases(plan_.job.id, plan_.attempt, phases); });
}

void AttemptRecorder::SetJobHosts(const std::vector<JobHost>& hosts) {
  Guarded([&] { store_.SetJobHosts(plan_.job.id, hosts); });
}

void AttemptRecorder::SaveProgress(const std::vector<WorkerProgress>& progress,
                                   const std::vector<StepSamplesUpdate>& samples) {
  Guarded([&] { RunRecords(store_).SaveProgress(plan_.job.id, plan_.attempt, progress, samples); });
}

void AttemptRecorder::SetHangReport(const HangReportRecord& report) {
  Guarded([&] { RunRecords(store_).SetHangReport(plan_.job.id, plan_.attempt, report); });
}

}  // namespace podrun
