// `podrun watch` (see watch_command.h).
#include "launcher/commands/watch_command.h"

#include <fmt/format.h>

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

}  // namespace podrun
