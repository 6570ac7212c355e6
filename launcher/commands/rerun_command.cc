// `podrun rerun`: a new attempt of a recorded job (see rerun_command.h).
#include "launcher/commands/rerun_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <thread>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/attempt/setup_phase.h"
#include "launcher/base/open_files.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/pod/worker_range.h"
#include "launcher/recovery/driver_lock.h"
#include "launcher/recovery/keeper.h"
#include "launcher/recovery/recovery_report.h"
#include "launcher/recovery/restarts.h"
#include "launcher/spec/job_env.h"
#include "launcher/spec/spec.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recorded_spec.h"
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
  JobRecord job = store.ResolveJob(request.job);
  // One driver per job: a keeper that watches it would restart or recover it under this rerun.
  // On this machine, whoever holds its driver lock (a keeper, an attached launch or rerun); on
  // another machine, a keeper whose heartbeat is fresh.
  if (const KeeperView keeper = ViewKeeper(store, home, job);
      keeper.state == KeeperState::kRunning) {
    throw UsageError(fmt::format(
        "job {} is watched by its keeper (pid {} on {}): it restarts the job itself; podrun "
        "stop {} first, then rerun",
        job.id, keeper.pid, keeper.host, job.id));
  }
  // Taken after ViewKeeper: a driver that opens its lock file again loses its lock.
  const DriverRole role = request.detach ? DriverRole::kDetachedRerun : DriverRole::kAttachedRerun;
  std::optional<DriverLock> driving = DriverLock::TryAcquire(home, job.id, role);
  // A keeper that has recorded its end (status says "ended") holds the lock for the moment it
  // takes to exit: waited for, briefly, rather than refused.
  for (int i = 0; !driving && i < 50; ++i) {
    const std::optional<Driver> driver = CurrentDriver(home, job.id);
    if (!driver || driver->role != DriverRole::kKeeper) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::optional<DriverLock> again = DriverLock::TryAcquire(home, job.id, role)) {
      driving.emplace(std::move(*again));
    }
  }
  if (!driving) {
    const std::optional<Driver> driver = CurrentDriver(home, job.id);
    throw UsageError(fmt::format(
        "job {} is driven by its {} (pid {} on {}): one driver per job; podrun stop {} first, "
        "then rerun",
        job.id, DriverRoleName(driver ? driver->role : DriverRole::kKeeper),
        driver ? driver->pid : 0, driver ? driver->host : ThisHostName(), job.id));
  }
  JobSpec spec = RecordedSpec(store, job);
  std::filesystem::path local_root;
  Pod pod = PodOfJob(job, &local_root);
  if (request.failed) {
    const auto latest = store.LatestAttempt(job.id);
    if (!latest) throw UsageError(fmt::format("job {} has no attempt to rerun", job.id));
    pod.selected = FailedWorkers(store.Workers(job.id, latest->number));
    if (pod.selected.empty()) {
      Say(
          fmt::format("no worker failed in attempt {} of job {}: "
                      "nothing to rerun",
                      latest->number, job.id));
      return ExitCode::kOk;
    }
  }
  EnsureOpenFiles(pod.selected.size());
  AttemptInputs inputs = ReadAttemptInputs(spec, job.env_overrides);
  const int attempt = store.AddAttempt(job.id, pod.selected, AttemptReason::kRerun);
  WriteAll(STDOUT_FILENO, fmt::format("job: {}\n", job.id));
  Say(fmt::format("attempt {} of job {} on w{}", attempt, job.id, FormatWorkerRange(pod.selected)));
  AttemptPlan plan = MakeAttemptPlan(job, attempt, spec, pod, home, std::move(inputs),
                                     job.env_overrides, {.detach = request.detach});
  plan.resumed_from = store.GetAttempt(job.id, attempt).resumed_from;
  const ExitCode code = RunAttemptsWithRestarts(store, plan);
  driving.reset();  // the keeper takes it next
  if (!request.detach || !SpecNeedsKeeper(spec) || !KeeperTakesOver(code)) return code;
  // As for launch -d: nobody else watches it; a start that failed is retried by the keeper.
  const int keeper = SpawnKeeper(home, job.id, job.secret_names);
  Say(fmt::format("keeper of job {}: pid {} on this machine (its log: {})", job.id, keeper,
                  (JobDir(home, job.id) / "keeper.log").string()));
  return code;
}

namespace {

CommandRun AddRerunOptions(CLI::App& app) {
  app.description(
      "Run JOB again as a new attempt, with its recorded spec, hosts and options (no\n"
      "gcloud needed). --failed: only the workers whose process failed, was lost or\n"
      "never started in the latest attempt; their indexes and the counts still describe\n"
      "the whole pod. That fits per-worker work (a setup step, data preparation, shards\n"
      "processed independently); a collective training job needs the whole gang again.\n"
      "Exit codes as for launch.");
  auto request = std::make_shared<RerunRequest>();
  app.add_option("job", request->job, "Job id, unique id prefix, or name")->required();
  app.add_flag("--failed", request->failed, "Only the workers that failed in the latest attempt");
  app.add_flag("-d,--detach", request->detach, "Return once every worker has started");
  app.footer("Example: podrun rerun bert-base --failed");
  return [request] { return RunRerun(*request); };
}

}  // namespace

Command RerunCommand() {
  return {"rerun", "run a job again (--failed: only the workers that failed)", AddRerunOptions};
}

}  // namespace podrun
