// `podrun rerun JOB [--failed] [-d]`: a new attempt of a recorded job, with its recorded spec,
// hosts and options (no gcloud needed), on every worker or only on those that failed
// (docs/reference.md).
#pragma once

#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"
#include "launcher/store/job_store.h"

namespace podrun {

struct RerunRequest {
  std::string job;      // id, unique prefix or name
  bool failed = false;  // only the workers whose process failed, was lost or never started
  bool detach = false;
};

// Prints "job: <id>" on stdout and runs the new attempt (RunAttempt): its exit code. With
// --failed and nothing that failed: says so and returns 0. Throws Error(kUsage) for an unknown
// job or a spec that no longer parses.
ExitCode RunRerun(const RerunRequest& request);

// The workers --failed picks from the latest attempt's records: failed, lost, or never started
// (no start time), in index order. Workers podrun stopped because another failed are not.
std::vector<int> FailedWorkers(const std::vector<WorkerRecord>& workers);

// `podrun rerun` in the command table (command.h): its options, registered on its app.
Command RerunCommand();

}  // namespace podrun
