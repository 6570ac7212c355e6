// `podrun watch JOB`: the keeper of a detached job (docs/reference.md, "Provisioning and
// recovery"). The keeper is the attached launch's loop without a terminal (docs/design.md
// decision 16): it follows the running attempt (FollowAttempt), stops the gang on a failure,
// restarts it as the spec's `restarts:` says, recreates a preempted node (pod.create), and
// records all of it. One keeper per job at most (KeeperLock).
#pragma once

#include <filesystem>
#include <string>

#include "launcher/base/error.h"

namespace podrun {

struct WatchRequest {
  std::string job;          // id, unique prefix or name; empty: the latest job
  bool foreground = false;  // be the keeper in this process (as `launch -d` starts it)
};

// Without `foreground`: starts a keeper for the job in the background (SpawnKeeper) and says
// where it runs and logs. With it: is the keeper until the job ends, or the restarts are used
// up. A job already watched is said (0); a job that ended has nothing to watch (0).
ExitCode RunWatch(const WatchRequest& request);

// Starts `podrun watch JOB --foreground` detached from this terminal and process (a session of
// its own, stdin /dev/null, stdout and stderr appended to jobs/<id>/keeper.log), with this
// process's environment (the spec's secret_env values among it: they are never written
// anywhere). Waits until it holds the job's keeper lock; returns its pid. Throws
// Error(kFailed) when it could not start or ended at once (its log says why).
int SpawnKeeper(const std::filesystem::path& home, const std::string& job_id);

}  // namespace podrun
