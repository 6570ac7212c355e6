// `podrun why [JOB] [--json]`: what each worker of a job's latest attempt is doing now, gathered
// from every worker at once (insight/why_gather.h), the suspects first (docs/reference.md,
// "podrun why").
#pragma once

#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct WhyCommandRequest {
  std::string job;     // id, unique prefix or name; empty: the latest job
  bool json = false;   // the report as one JSON object
  bool stacks = true;  // --no-stacks: processes only (faster)
};

// Prints the report (stdout). Returns 0, or 3 when a worker could not be asked. Throws
// Error(kUsage) for an unknown job or when there is none. The store is only read.
ExitCode RunWhy(const WhyCommandRequest& request);

// `podrun why` in the command table (command.h).
Command WhyCommand();

}  // namespace podrun
