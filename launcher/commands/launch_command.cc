// `podrun launch`.
#include "launcher/commands/launch_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/attempt/setup_phase.h"
#include "launcher/base/open_files.h"
#include "launcher/commands/pod_options.h"
#include "launcher/commands/up_command.h"
#include "launcher/connect/job_pod.h"
#include "launcher/connect/pod.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"
#include "launcher/recovery/driver_lock.h"
#include "launcher/recovery/host_keys.h"
#include "launcher/recovery/keeper.h"
#include "launcher/recovery/restarts.h"
#include "launcher/spec/job_env.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recorded_spec.h"
#include "launcher/store/run_records.h"

namespace podrun {

ExitCode RunLaunch(const LaunchRequest& request) {
  JobSpec spec = ParseSpecFile(request.spec_path);
  // Recorded absolute: whoever re-reads it (rerun, the keeper) gets this tree from any folder.
  spec.path = AbsoluteSpecPath(spec.path);
  if (!request.name.empty()) {
    if (!IsValidJobName(request.name)) {
      throw UsageError(
          fmt::format("bad job name '{}': use letters, digits, '.', '_' and '-'", request.name));
    }
    spec.name = request.name;
  }
  PodSettings settings = MergePodSettings(request.pod, spec.pod);
  if (spec.pod.create && !settings.create) {
    Say(fmt::format(
        "the spec's create: is for {} {} (zone {}); the pod chosen on the command line "
        "is used as it is: podrun never creates, deletes or recreates it",
        spec.pod.mig ? "mig" : "tpu", spec.pod.mig ? *spec.pod.mig : spec.pod.tpu.value_or("?"),
        spec.pod.zone.value_or("?")));
  }
  // pod.create: the node is made to exist and be READY first (nothing is recorded before; its
  // time is recorded with the first attempt once the job exists, for `podrun report`).
  const int64_t provision_began = NowUnixNs();
  const std::vector<PodSourceRef> created = ProvisionSpecSlices(&settings);
  const int64_t provision_ended = NowUnixNs();
  // New VMs, new host keys: the ones each created slice publishes are pinned (only its workers'),
  // before anything connects to them.
  Pod pod = ResolvePod(settings, PinCreatedSlices(created));
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
  // One driver per job (recovery/driver_lock.h): taken before the job has an attempt, so that a
  // `podrun watch` that saw it in between finds nothing to watch and lets it go (waited for);
  // one that still holds it makes this launch refuse, never drive beside it.
  std::optional<DriverLock> driving(TakeDriverLock(
      home, job.id, request.detach ? DriverRole::kDetachedLaunch : DriverRole::kAttachedLaunch));
  int attempt = store.AddAttempt(job.id, pod.selected, AttemptReason::kLaunch);
  if (!created.empty()) {  // the pod's own phase (worker -1): the nodes this launch created
    RunRecords(store).SetPhases(
        job.id, attempt,
        {{.worker = -1,
          .phase = settings.create && settings.create->queued ? "queued/creating" : "creating",
          .start_ns = provision_began,
          .end_ns = provision_ended,
          .failed = false}});
  }
  WriteAll(STDOUT_FILENO, fmt::format("job: {}\n", job.id));

  const AttemptPlan plan =
      MakeAttemptPlan(job, attempt, spec, pod, home, std::move(inputs), overrides,
                      {.detach = request.detach, .force_setup = request.force_setup});
  const ExitCode code = RunAttemptsWithRestarts(store, plan);
  driving.reset();  // before a keeper takes it over
  if (!request.detach || !SpecNeedsKeeper(spec) || !KeeperTakesOver(code)) return code;
  // Nobody watches a detached job: its keeper does (recovery/keeper.h), a start that failed
  // included (it restarts it as an attached launch would).
  const int keeper = SpawnKeeper(home, job.id, spec.secret_env);
  Say(fmt::format(
      "keeper of job {}: pid {} on this machine; it {} up to {} times{} "
      "(podrun status {} shows it; its log: {})",
      job.id, keeper, code == ExitCode::kOk ? "restarts the job" : "retries the start that failed",
      spec.restarts,
      settings.create
          ? (spec.preemptions
                 ? fmt::format(" and recreates a preempted node up to {} times", *spec.preemptions)
                 : std::string(" and recreates a preempted node (preemptions: "
                               "unlimited)"))
          : std::string(),
      job.id, (JobDir(home, job.id) / "keeper.log").string()));
  return code;
}

namespace {

CommandRun AddLaunchOptions(CLI::App& app) {
  app.description(
      "Run the job of SPEC.yaml on every worker in lockstep: connect, bootstrap the\n"
      "agent, sync the spec's directory, mount, run the setup (cached), free the\n"
      "accelerators, start everywhere at once, stream the merged log, report.\n"
      "Prints 'job: <id>' first. Ctrl-C stops the job on every worker; losing the\n"
      "launcher any other way leaves it running (see 'podrun logs JOB -f').");
  auto request = std::make_shared<LaunchRequest>();
  app.add_option("spec", request->spec_path, "The job spec (YAML)")->required();
  AddPodOptions(app, request->pod);
  app.add_option("-n,--name", request->name, "Job name (default: the spec's name)");
  app.add_flag("-d,--detach", request->detach, "Return once every worker has started");
  app.add_option("-e,--env", request->env, "KEY=VALUE for the run process (repeatable)");
  app.add_flag("--force-setup", request->force_setup, "Run setup even when cached");
  app.footer("Example: podrun launch examples/torch-ddp.yaml --local 4 -e EXAMPLES=$PWD/examples");
  return [request] { return RunLaunch(*request); };
}

}  // namespace

Command LaunchCommand() {
  return {"launch", "run a job spec on every worker in lockstep, merged logs", AddLaunchOptions};
}

}  // namespace podrun
