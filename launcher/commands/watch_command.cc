// `podrun watch` (see watch_command.h).
#include "launcher/commands/watch_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "launcher/output/say.h"
#include "launcher/recovery/keeper.h"
#include "launcher/store/podrun_home.h"

namespace podrun {

ExitCode RunWatch(const WatchRequest& request) {
  const std::filesystem::path home = PodrunHome();
  JobStore store(home / "podrun.db");
  const JobRecord job = store.ResolveJobOrLatest(request.job);
  if (request.foreground) {
    std::optional<Keeper> keeper = Keeper::Acquire(home, job.id);
    if (!keeper) {
      Say(fmt::format("job {} already has a keeper: nothing to do", job.id));
      return ExitCode::kOk;
    }
    return keeper->Run(store, job);
  }
  if (std::optional<int> holder = KeeperHolder(home, job.id)) {
    Say(fmt::format("job {} already has a keeper (pid {}): nothing to do", job.id, *holder));
    return ExitCode::kOk;
  }
  const int pid = SpawnKeeper(home, job.id);
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
