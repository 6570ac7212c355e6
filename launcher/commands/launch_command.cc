// `podrun launch`.
#include "launcher/commands/launch_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/attempt/restarts.h"
#include "launcher/attempt/setup_phase.h"
#include "launcher/commands/open_files.h"
#include "launcher/connect/job_pod.h"
#include "launcher/connect/pod_options.h"
#include "launcher/output/labelled_output.h"
#include "launcher/spec/job_env.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"

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
  // Before anything is recorded: an unreadable setup input is a bad spec (exit 2).
  AttemptInputs inputs = ReadAttemptInputs(spec, overrides);

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

  const AttemptPlan plan =
      MakeAttemptPlan(job, attempt, spec, pod, home, std::move(inputs), overrides,
                      {.detach = request.detach, .force_setup = request.force_setup});
  return RunAttemptsWithRestarts(store, plan);
}

}  // namespace podrun
