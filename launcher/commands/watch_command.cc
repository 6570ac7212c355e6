// `podrun watch` (see watch_command.h).
#include "launcher/commands/watch_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "launcher/output/say.h"
#include "launcher/recovery/keeper.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recorded_spec.h"

namespace podrun {

ExitCode RunWatch(const WatchRequest& request) {
  const std::filesystem::path home = PodrunHome();
  JobStore store(home / "podrun.db");
  const JobRecord job = store.ResolveJobOrLatest(request.job);
  // One driver per job: beside an attached launch or rerun, or another keeper, nothing starts.
  auto already_driven = [&] {
    const std::optional<Driver> driver = CurrentDriver(home, job.id);
    if (driver) {
      Say(fmt::format("job {} is already driven by its {} (pid {} on {}): nothing to do", job.id,
                      DriverRoleName(driver->role), driver->pid, driver->host));
    } else {  // it ended between the two looks
      Say(fmt::format("job {} is already driven by another process: nothing to do", job.id));
    }
    return ExitCode::kOk;
  };
  if (request.foreground) {
    std::optional<Keeper> keeper = Keeper::Acquire(home, job.id);
    if (!keeper) return already_driven();
    if (::isatty(STDERR_FILENO) == 0) StampSayings();  // its log, read days later
    return keeper->Run(store, job);
  }
  if (DriverHolder(home, job.id)) return already_driven();
  RefuseRelativeSpecPath(job);  // said here, not in the log of a keeper that ends at once
  const int pid = SpawnKeeper(home, job.id, job.secret_names);
  Say(fmt::format("keeper of job {}: pid {} on {} (its log: {})", job.id, pid, ThisHostName(),
                  (JobDir(home, job.id) / "keeper.log").string()));
  return ExitCode::kOk;
}

namespace {

CommandRun AddWatchOptions(CLI::App& app) {
  app.description(
      "Start the keeper of a detached job again (after its machine or keeper died): a\n"
      "process on this machine, detached from the terminal, that follows the job as an\n"
      "attached launch would: stops the gang on a failure, restarts it as restarts:\n"
      "says, recreates a preempted node (pod.create), records it all. One keeper per\n"
      "job at most; 'podrun status JOB' shows it. Run it on an always-on machine.");
  auto request = std::make_shared<WatchRequest>();
  app.add_option("job", request->job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--foreground", request->foreground,
               "Be the keeper in this terminal (as an attached launch: Ctrl-C stops the job)");
  app.footer("Example: podrun watch bert-base");
  return [request] { return RunWatch(*request); };
}

}  // namespace

Command WatchCommand() {
  return {"watch", "start the keeper of a detached job again", AddWatchOptions};
}

}  // namespace podrun
