// `podrun watch JOB`: starts the keeper of a detached job again (recovery/keeper.h), or, with
// --foreground, is that keeper.
#pragma once

#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct WatchRequest {
  std::string job;          // id, unique prefix or name; empty: the latest job
  bool foreground = false;  // be the keeper in this process (as `launch -d` starts it)
};

// Without `foreground`: starts a keeper for the job in the background (SpawnKeeper) and says
// where it runs and logs. With it: is the keeper until the job ends, or the restarts are used
// up. A job already watched is said (0); a job that ended has nothing to watch (0).
ExitCode RunWatch(const WatchRequest& request);

// `podrun watch` in the command table (command.h): its options, registered on its app.
Command WatchCommand();

}  // namespace podrun
