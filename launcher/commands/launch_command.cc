// `podrun launch`.
#include "launcher/commands/launch_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include "launcher/commands/open_files.h"
#include "launcher/job/attempt_runner.h"
#include "launcher/job/job_env.h"
#include "launcher/job/job_pod.h"
#include "launcher/job/job_store.h"
#include "launcher/job/podrun_home.h"
#include "launcher/job/restarts.h"
#include "launcher/job/setup_phase.h"
#include "launcher/output/labelled_output.h"
#include "launcher/pod/pod_options.h"

namespace podrun {

ExitCode RunLaunch(const LaunchRequest& request) {
  JobSpec spec = ParseSpecFile(request.spec_path);
  if (!request.name.empty()) {
    if (!IsValidJobName(request.name)) {
      throw UsageError(
          fmt::format("bad job name '{}': use letters, digits, '.', '_' and '-'", request.name));
    }
    spec.name = request.name;
  }
  Pod pod = ResolvePod(MergePodSettings(request.pod, spec.pod));
  EnsureOpenFiles(pod.selected.size());
  std::map<std::string, std::string> overrides = ParseEnvAssignments(request.env);
  std::map<std::string, std::string> secrets = ReadSecrets(spec.secret_env);
  // Before anything is recorded: an unreadable setup input is a bad spec (exit 2).
  const std::string setup_stamp = spec.setup.empty() ? "" : SetupStamp(spec, overrides);

  std::filesystem::path home = PodrunHome();
  JobStore store(home / "podrun.db");
  JobRecord job;
  job.name = spec.name;
  job.pod = pod.description;
  job.spec_text = spec.text;
  job.spec_path = spec.path;
  job.hosts = JobHostsOf(pod, {});
  job.env_overrides = overrides;
  job.secret_names = spec.secret_env;
  job.options_json = PodOptionsJson(pod, home / "local");
  job = store.CreateJob(job);
  int attempt = store.AddAttempt(job.id, pod.selected);
  WriteAll(STDOUT_FILENO, fmt::format("job: {}\n", job.id));

  AttemptPlan plan;
  plan.job = job;
  plan.attempt = attempt;
  plan.spec = spec;
  plan.pod = pod;
  plan.home = home;
  plan.secrets = secrets;
  plan.overrides = overrides;
  plan.detach = request.detach;
  plan.force_setup = request.force_setup;
  plan.setup_stamp = setup_stamp;
  return RunAttemptsWithRestarts(store, plan);
}

}  // namespace podrun
