// `podrun stop JOB`: stops a job's latest attempt on every worker (docs/reference.md).
#pragma once

#include <optional>
#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct StopRequest {
  std::string job;                   // id, unique prefix or name
  std::optional<int> grace_seconds;  // SIGTERM -> SIGKILL; default: the spec's grace_seconds
};

// Asks every worker's agent whose process may still run (all at once) to stop it, records the
// outcome in the store (those workers and the attempt: stopped), and prints per worker what
// happened (stderr). Returns 0, or 3 if an agent could not be reached. Throws Error(kUsage) for
// an unknown job.
ExitCode RunStop(const StopRequest& request);

// `podrun stop` in the command table (command.h): its options, registered on its app.
Command StopCommand();

}  // namespace podrun
