// `podrun rerun`: a new attempt of a recorded job (see rerun_command.h).
#include "launcher/commands/rerun_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include "launcher/commands/open_files.h"
#include "launcher/job/attempt_runner.h"
#include "launcher/job/job_env.h"
#include "launcher/job/job_pod.h"
#include "launcher/job/podrun_home.h"
#include "launcher/job/restarts.h"
#include "launcher/job/setup_phase.h"
#include "launcher/job/spec.h"
#include "launcher/pod/worker_range.h"
#include "proto/write_all.h"

namespace podrun {

std::vector<int> FailedWorkers(const std::vector<WorkerRecord>& workers) {
  std::vector<int> failed;
  for (const WorkerRecord& w : workers) {
    const bool never_started = !w.start_ns && w.state != WorkerState::kExited;
    if (w.state == WorkerState::kFailed || w.state == WorkerState::kLost || never_started) {
      failed.push_back(w.index);
    }
  }
  return failed;
}

ExitCode RunRerun(const RerunRequest& request) {
  const std::filesystem::path home = PodrunHome();
  JobStore store(home / "podrun.db");
  const JobRecord job = store.ResolveJob(request.job);
  JobSpec spec = ParseSpecText(job.spec_text, job.spec_path);
  std::filesystem::path local_root;
  Pod pod = PodOfJob(job, &local_root);
  if (request.failed) {
    const auto latest = store.LatestAttempt(job.id);
    if (!latest) throw UsageError(fmt::format("job {} has no attempt to rerun", job.id));
    pod.selected = FailedWorkers(store.Workers(job.id, latest->number));
    if (pod.selected.empty()) {
      WriteAll(STDERR_FILENO, fmt::format("podrun: no worker failed in attempt {} of job {}: "
                                          "nothing to rerun\n",
                                          latest->number, job.id));
      return ExitCode::kOk;
    }
  }
  EnsureOpenFiles(pod.selected.size());
  const std::map<std::string, std::string> secrets = ReadSecrets(spec.secret_env);
  const std::string setup_stamp = spec.setup.empty() ? "" : SetupStamp(spec, job.env_overrides);
  const int attempt = store.AddAttempt(job.id, pod.selected);
  WriteAll(STDOUT_FILENO, fmt::format("job: {}\n", job.id));
  WriteAll(STDERR_FILENO, fmt::format("podrun: attempt {} of job {} on w{}\n", attempt, job.id,
                                      FormatWorkerRange(pod.selected)));
  AttemptPlan plan;
  plan.job = job;
  plan.attempt = attempt;
  plan.spec = spec;
  plan.pod = pod;
  plan.home = home;
  plan.secrets = secrets;
  plan.overrides = job.env_overrides;
  plan.detach = request.detach;
  plan.setup_stamp = setup_stamp;
  return RunAttemptsWithRestarts(store, plan);
}

}  // namespace podrun
