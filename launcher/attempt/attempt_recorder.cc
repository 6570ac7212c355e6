// The attempt's record in the job store, written from the attempt's threads.
#include <fmt/format.h>

#include "launcher/attempt/attempt_worker.h"
#include "launcher/base/error.h"
#include "launcher/output/say.h"

namespace podrun {

void AttemptRecorder::UpdateWorker(int index, const WorkerUpdate& update) {
  std::lock_guard lock(mutex_);
  try {
    store_.UpdateWorker(plan_.job.id, plan_.attempt, index, update);
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
}

void AttemptRecorder::SetAttempt(AttemptState state, std::optional<int> exit_code, bool ended) {
  std::lock_guard lock(mutex_);
  try {
    store_.SetAttemptState(plan_.job.id, plan_.attempt, state, exit_code,
                           ended ? std::optional<int64_t>(NowUnixNs()) : std::nullopt);
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
}

void AttemptRecorder::SetCause(AttemptEnd end, const std::string& cause) {
  std::lock_guard lock(mutex_);
  try {
    store_.SetAttemptEnd(plan_.job.id, plan_.attempt, end, cause);
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
}

void AttemptRecorder::SetPhases(const std::vector<PhaseRecord>& phases) {
  std::lock_guard lock(mutex_);
  try {
    RunRecords(store_).SetPhases(plan_.job.id, plan_.attempt, phases);
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
}

void AttemptRecorder::SetJobHosts(const std::vector<JobHost>& hosts) {
  std::lock_guard lock(mutex_);
  try {
    store_.SetJobHosts(plan_.job.id, hosts);
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
}

}  // namespace podrun
