// `podrun status [JOB]`: per worker of a job's latest attempt, its host, state, exit code and
// times, checked with the workers' agents where the store cannot know (docs/reference.md).
#pragma once

#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct StatusRequest {
  std::string job;    // id, unique prefix or name; empty: the latest job
  bool json = false;  // one JSON object instead of the table
};

// Prints the status on stdout and returns 0. Workers the store shows as not ended (pending,
// connecting, setup, running, lost) are asked their agent, and what it says is recorded (the
// launcher may have gone). Throws Error(kUsage) for an unknown job or when there is none.
ExitCode RunStatus(const StatusRequest& request);

// `podrun status` in the command table (command.h): its options, registered on its app.
Command StatusCommand();

}  // namespace podrun
