// `podrun ls`: the recorded jobs, newest first (docs/reference.md).
#pragma once

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct LsRequest {
  bool json = false;  // one JSON array instead of the table
  int limit = 0;      // at most this many jobs; 0: all
};

// Prints the jobs (id, name, pod, state, attempts, started, duration) from the store on stdout
// and returns 0. The state is the latest attempt's as recorded: a detached job reads as running
// until status, logs or stop has heard from its agents that it ended.
ExitCode RunLs(const LsRequest& request);

// `podrun ls` in the command table (command.h): its options, registered on its app.
Command LsCommand();

}  // namespace podrun
